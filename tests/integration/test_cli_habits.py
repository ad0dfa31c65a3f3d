"""Issue 33, item 13: the command line's habits a new user notices — suggestions for a
mistyped command or option, the right `--help` to read, an interruption that names the
files it kept, `run --quiet` naming the failing evals, `calibrate`'s last line saying
why it exits as it does, and no empty table for a run where nothing could run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_interruption import slow_suite, wait_for_requests
from tests.support.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
TURNCHECK = [sys.executable, "-m", "turncheck"]


def turncheck(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TURNCHECK, *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)


# ---- did you mean, and which --help ------------------------------------------------------


def test_a_mistyped_command_gets_a_suggestion() -> None:
    done = turncheck("valdate", "examples")
    assert done.returncode == 2
    assert "did you mean validate?" in done.stderr, done.stderr


def test_a_mistyped_option_gets_a_suggestion_and_the_commands_own_help() -> None:
    done = turncheck("run", "--jsn", "out.json", "examples")
    assert done.returncode == 2
    assert "did you mean --json?" in done.stderr
    assert "(see `turncheck run --help`)" in done.stderr, done.stderr
    compared = turncheck("compare", "--treshold", "5", "base.json", "head.json")
    assert "did you mean --cost-threshold-usd?" in compared.stderr, compared.stderr
    assert "(see `turncheck compare --help`)" in compared.stderr


def test_an_option_of_another_command_is_named_with_its_command() -> None:
    done = turncheck("run", "--treshold=3", "examples")
    assert done.returncode == 2
    assert "`turncheck run` has no --treshold; --cost-threshold-usd is an option of " \
        "turncheck compare and diff" in done.stderr, done.stderr
    assert "(see `turncheck run --help`)" in done.stderr


def test_a_bad_choice_gets_a_suggestion() -> None:
    done = turncheck("run", "--mode", "replya", "examples")
    assert done.returncode == 2 and "did you mean replay?" in done.stderr, done.stderr


# ---- Ctrl-C names the files kept ---------------------------------------------------------


def interrupted_record(tmp_path: Path, server: ScriptedServer, *options: str) -> str:
    """`record` of a slow suite stopped by Ctrl-C; its stderr."""
    server.add_rule("ok")
    server.set_latency(0.4)
    suite = slow_suite(tmp_path, server)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    process = subprocess.Popen([*TURNCHECK, "record", str(suite), "--concurrency", "2",
                                *options], cwd=tmp_path,
                               env={**env, "OPENAI_API_KEY": "sk-test-0000"}, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_requests(server, 3, process)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stdout + stderr
    return stderr


def test_ctrl_c_names_the_report_files_it_kept(
    tmp_path: Path, scripted_server: ScriptedServer,
) -> None:
    stderr = interrupted_record(tmp_path, scripted_server, "--json", "partial.json",
                                "--junit", "partial.xml")
    [line] = [line for line in stderr.splitlines() if "interrupted by SIGINT" in line]
    assert "the partial report was kept in partial.json (--json), partial.xml (--junit)" \
        in line, line
    assert "every completed recording was saved in its cassette" in line
    assert (tmp_path / "partial.json").is_file() and (tmp_path / "partial.xml").is_file()


def test_ctrl_c_without_an_output_option_says_no_report_was_written(
    tmp_path: Path, scripted_server: ScriptedServer,
) -> None:
    stderr = interrupted_record(tmp_path, scripted_server)
    [line] = [line for line in stderr.splitlines() if "interrupted by SIGINT" in line]
    assert "no partial report was written (no --json / --junit / --html given)" in line, line
    assert "partial report was kept" not in line


# ---- what run and calibrate print ------------------------------------------------------------


def test_run_quiet_lists_the_failing_evals_one_line_each() -> None:
    done = turncheck("run", "--quiet", "examples/geography", "examples/math")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    listed = lines[lines.index("Failed:") + 1:]
    assert listed[:2] == [
        "  ❌ capitals › canada (examples/geography/capitals.eval.yaml:37): failed after 2 turns",
        "  ❌ arithmetic-self-correction › multiply (examples/math/arithmetic.eval.yaml:20): "
        "failed after 4 turns",
    ], done.stdout
    assert "Eval 1:" not in done.stdout  # still no transcript


def test_calibrate_ends_with_the_exit_line() -> None:
    done = turncheck("calibrate", "examples/support")
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1] == "Exit 0: nothing failed (11 samples graded) · " \
        "replay mode", done.stdout
    strict = turncheck("calibrate", "examples/support", "--min-agreement", "50")
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[-1] == "Exit 1: 2 grader calibration problems (above) " \
        "· replay mode", strict.stdout


@pytest.mark.parametrize("command", ["run", "calibrate"])
def test_an_invalid_file_prints_its_problems_and_no_empty_table(
    tmp_path: Path, command: str,
) -> None:
    name = "bad.eval.yaml" if command == "run" else "bad.samples.toml"
    text = ("metadata: {name: x, model: gpt-4o-mini}\nevals:\n  - prompt: hi\n"
            "    checks: [{mach: '*'}]\n") if command == "run" else "[grader]\nx = 1\n"
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = turncheck(command, name, cwd=tmp_path)
    assert done.returncode == 1
    assert f"{name}:" in done.stderr and "error:" in done.stderr  # the diagnostics
    assert done.stdout.splitlines()[-1].startswith("Exit 1: 1 invalid file"), done.stdout
    if command == "run":
        assert "Total" not in done.stdout and "$0" not in done.stdout, done.stdout
