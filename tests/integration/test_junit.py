"""`turncheck run --junit PATH`: JUnit XML that CI systems can read.

Suites are recorded against the scripted server (127.0.0.1), which is then shut down;
the CLI replays them from the cassettes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.action_harness import record, suite_text
from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main

EVALS = """\
  - name: passes-first-try
    prompt: What is 2 + 2?
    checks:
      - match: "*4*"
  - name: passes-on-retry
    prompt: What is 15 * 7?
    checks:
      - match: "*105*"
      - prompt: Try again.
        checks:
          - match: "*105*"
  - name: always-wrong
    prompt: What is the capital of France?
    checks:
      - match: "*Paris*"
  - name: "odd\\x01name"
    prompt: Print control characters.
    checks:
      - match: "*ok*"
  - name: will-be-missing
    prompt: This prompt is recorded.
    checks:
      - match: "*yes*"
"""

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONTROL_REPLY = "ok \x00nul \x07bell \x1b[31mred\x1b[0m \x0bvt \x0cff \ufffeend"


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("junit")
    directory = root / "suites"
    directory.mkdir()
    path = directory / "mixed.eval.yaml"
    with ScriptedServer() as server:
        server.add_rule("4", contains="2 + 2")
        server.add_rule("It is 100.", contains="15 * 7")
        server.add_rule("105", contains="Try again")
        server.add_rule('Lyon <b>&amp;</b> ]]> "quoted"', contains="France")
        server.add_rule(CONTROL_REPLY, contains="control characters")
        server.add_rule("yes", contains="recorded")
        path.write_text(
            suite_text(server.base_url, EVALS, name='"mixed\\x02suite"'), encoding="utf-8"
        )
        record(path)
    # Change one prompt after recording: that eval errors in replay.
    path.write_text(
        path.read_text().replace("This prompt is recorded.", "This prompt is not."),
        encoding="utf-8",
    )
    yield root


def run_junit(cwd: Path, *paths: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = cwd / "reports" / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", "--junit", str(out), *paths],
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done, out


@pytest.fixture(scope="module")
def junit(suite_dir: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    return run_junit(suite_dir, "suites")


def cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {case.get("name", ""): case for case in root.iter("testcase")}


def test_junit_is_well_formed_with_one_testcase_per_eval(
    junit: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, path = junit
    assert done.returncode == 1
    root = ET.parse(path).getroot()  # raises on malformed XML
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert suite.get("file") == "suites/mixed.eval.yaml"
    testcases = suite.findall("testcase")
    assert len(testcases) == 5
    assert [c.get("name") for c in testcases] == [
        "passes-first-try",
        "passes-on-retry",
        "always-wrong",
        "odd\ufffdname",
        "will-be-missing",
    ]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "1")


def test_failures_and_errors_are_marked_on_the_right_testcases(
    junit: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    by_name = cases(junit[1])
    for name in ("passes-first-try", "passes-on-retry", "odd\ufffdname"):
        assert by_name[name].find("failure") is None, name
        assert by_name[name].find("error") is None, name

    wrong = by_name["always-wrong"]
    failure = wrong.find("failure")
    assert failure is not None and wrong.find("error") is None
    assert "FAIL" in (failure.get("message") or "")

    missing = by_name["will-be-missing"]
    error = missing.find("error")
    assert error is not None and missing.find("failure") is None
    assert "turncheck record suites/mixed.eval.yaml" in (error.get("message") or "")


def test_testcase_output_carries_the_transcript(
    junit: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    by_name = cases(junit[1])
    retry = by_name["passes-on-retry"].findtext("system-out") or ""
    assert "Turn 1:" in retry and "Turn 2:" in retry
    assert "Response: It is 100." in retry and "Response: 105" in retry
    assert "Overall: ✅ PASS (succeeded on turn 2)" in retry
    # Markup-like model output is text, not XML.
    wrong = by_name["always-wrong"].findtext("system-out") or ""
    assert 'Response: Lyon <b>&amp;</b> ]]> "quoted"' in wrong


def test_testcases_point_at_the_eval_in_the_suite_file(
    junit: tuple[subprocess.CompletedProcess[str], Path], suite_dir: Path
) -> None:
    lines = (suite_dir / "suites" / "mixed.eval.yaml").read_text().splitlines()
    for name, case in cases(junit[1]).items():
        assert case.get("file") == "suites/mixed.eval.yaml"
        line = int(case.get("line") or 0)
        assert lines[line - 1].strip().startswith(("- name:", "prompt:", "- prompt:")), (name, line)


def test_control_characters_in_model_output_do_not_break_the_xml(
    junit: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    raw = junit[1].read_bytes()
    for char in "\x00\x01\x02\x07\x0b\x0c\x1b\ufffe":
        assert char.encode("utf-8") not in raw, repr(char)
    by_name = cases(junit[1])
    output = by_name["odd\ufffdname"].findtext("system-out") or ""
    assert "ok" in output and "bell" in output and "[31mred" in output
    suite = ET.parse(junit[1]).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "mixed\ufffdsuite"


def test_all_passing_run_has_no_failure_elements(suite_dir: Path, tmp_path: Path) -> None:
    source = suite_dir / "suites"
    shutil.copytree(source, tmp_path / "suites")
    path = tmp_path / "suites" / "mixed.eval.yaml"
    text = path.read_text()
    # Keep only the first two (passing) evals.
    path.write_text(text[: text.index("  - name: always-wrong")], encoding="utf-8")
    done, out = run_junit(tmp_path, "suites")
    assert done.returncode == 0, done.stdout + done.stderr
    root = ET.parse(out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "0", "0")
    assert not list(root.iter("failure")) and not list(root.iter("error"))


def test_protocol_cases_and_sample_files_are_testcases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every row of the run is a testcase: a protocol case at its line in the cases file,
    failing with its score against the threshold; a graded sample file with its
    agreement."""
    for example in ("flow-gating", "support"):
        shutil.copytree(EXAMPLES / example, tmp_path / example)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--quiet", "--junit", "junit.xml", "flow-gating", "support"])
    assert code == 1, capsys.readouterr().err  # the three protocol cases fail
    root = ET.parse(tmp_path / "junit.xml").getroot()
    suites = {suite.get("file"): suite for suite in root.iter("testsuite")}
    cases_file = "flow-gating/flow-gating.cases.yaml"
    protocol = suites[cases_file]
    assert (protocol.get("tests"), protocol.get("failures")) == ("3", "3")
    by_name = {case.get("name"): case for case in protocol.iter("testcase")}
    assert set(by_name) == {"t-cell-memory", "b-cell-maturation", "nk-monocyte"}
    lines = (tmp_path / cases_file).read_text(encoding="utf-8").splitlines()
    for name, case in by_name.items():
        assert f"id: {name}" in lines[int(case.get("line", "0")) - 1]
        failure = case.find("failure")
        assert failure is not None and "< 0.5" in failure.get("message", "")
        assert "Turn 1" in (case.findtext("system-out") or "")
    for samples in ("support/greeting.samples.toml", "support/tone.samples.toml"):
        [case] = suites[samples].iter("testcase")
        assert case.find("failure") is None
        assert "Agreement" in (case.findtext("system-out") or "")
    assert root.get("tests") == str(2 + 3 + 2)  # two evals, three cases, two sample files
