"""The CLI explains itself (issue 25): the last line says why the exit code is what it
is, --quiet is quiet, typos get a "did you mean", Ctrl-C while loading is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MATH = ROOT / "examples" / "math"  # replayed: one eval fails, one passes


def last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


def test_run_ends_with_why_it_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(MATH)]) == 1
    out = capsys.readouterr().out
    assert last_line(out).startswith("Exit 1: 1 of 2 evals failed · ran in ")
    assert last_line(out).endswith("s (replay mode)")
    assert "Ran in" not in out and out.count("ran in") == 1


def test_run_that_passes_says_so_last(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    report = tmp_path / "r.json"
    assert main(["run", str(ROOT / "examples" / "geography"), "--quiet", "--json", str(report)]
                ) in (0, 1)
    line = last_line(capsys.readouterr().out)
    assert line.startswith(("Exit 0: nothing failed (", "Exit 1: "))


def test_quiet_prints_no_progress_lines(capsys: pytest.CaptureFixture[str]) -> None:
    main(["run", str(MATH), "--quiet"])
    captured = capsys.readouterr()
    assert "[1/2]" not in captured.err and "[2/2]" not in captured.err
    main(["run", str(MATH)])
    assert "[2/2]" in capsys.readouterr().err  # not quiet: progress as before


def reports(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "run.json"
    main(["run", str(MATH), "--quiet", "--json", str(path)])
    return path, path


def test_compare_ends_with_why_and_a_local_report_names_no_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = reports(tmp_path)
    capsys.readouterr()
    assert main(["compare", str(base), str(head)]) == 0
    out = capsys.readouterr().out
    assert "commits:" not in out  # reports run locally name no commit: no `? → ?`
    assert last_line(out) == (
        "Exit 0: no --fail-on condition holds (invalid,error,regression,broken); "
        "--fail-on failure,likely-regression would fail it: 1 failed eval")

    assert main(["compare", str(base), str(head), "--fail-on", "failure"]) == 1
    assert last_line(capsys.readouterr().out) == (
        "Exit 1: --fail-on failure: 1 failed eval")
    assert main(["compare", str(base), str(head), "--fail-on", "regression"]) == 0
    assert last_line(capsys.readouterr().out) == (
        "Exit 0: no --fail-on condition holds (regression); "
        "--fail-on invalid,failure,likely-regression would fail it: 1 failed eval")


@pytest.mark.parametrize(("argv", "hint"), [
    (["run", "--jsn", "x.json"], "did you mean --json?"),
    (["compare", "a.json", "b.json", "--fail-onn", "cost"], "did you mean --fail-on?"),
])
def test_an_unknown_option_gets_a_did_you_mean(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and err.count("\n") == 1


def test_a_misspelt_suite_key_gets_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "typo.eval.yaml"
    suite.write_text("metadata:\n  name: typo\n  modle: openai/gpt-4o-mini\nevals:\n"
                     "  - name: a\n    prompt: hi\n    checks: [{match: '*'}]\n")
    assert main(["validate", str(suite)]) == 1
    assert 'unknown metadata key "modle" is ignored; did you mean "model"?' in (
        capsys.readouterr().out)


INTERRUPT_WHILE_LOADING = """
import sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "turncheck.engine.runner":
            raise KeyboardInterrupt  # as if Ctrl-C came while this module loads
        return None

sys.meta_path.insert(0, CtrlC())
from turncheck.cli.main import main
sys.exit(main(["run", sys.argv[1]]))
"""


def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130() -> None:
    done = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_LOADING, str(MATH)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 130
    assert done.stderr == "turncheck: interrupted\n"


def test_a_refused_key_is_said_once_with_the_variable_to_check(
    tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scripted_server.add_rule(fault="unauthorized")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0000")
    suite = tmp_path / "keys.eval.yaml"
    suite.write_text("metadata:\n  name: keys\n  model: gpt-4o-mini\nevals:\n" + "".join(
        f"  - name: e{i}\n    prompt: question {i}\n    checks: [{{match: '*'}}]\n"
        for i in range(3)))
    code = main(["run", str(suite), "--mode", "live", "--base-url", scripted_server.base_url])
    out = capsys.readouterr().out
    assert code == 1
    errors = out.split("Errors:\n", 1)[1].splitlines()
    assert errors[0].startswith("  💥 3 evals (keys › e0 and 2 more): ")
    assert errors[0].endswith(" — check OPENAI_API_KEY: the openai API key is missing or wrong")
    assert not errors[1].startswith("  💥")  # said once
    assert out.count("Incorrect API key provided") == 2  # the transcript's first eval, the list
    assert out.count("Overall: 💥 ERROR: the same as keys › e0") == 2
    assert "sk-wrong-key-0000" not in out
