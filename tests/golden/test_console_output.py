"""`turncheck run` as a user sees it: transcripts, summary table, reports, exit codes.

Suites are recorded once against the scripted server (127.0.0.1), which is then shut
down: every run below is a replay from the cassettes, with no network and no API key.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.action_harness import record, suite_text
from tests.support.logs import commands_in_log
from tests.support.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PRICE_TIME = "2025-01-01T00:00:00Z"

MATH_EVALS = """\
  - name: multiply
    prompt: What is 15 * 7?
    checks:
      - match: "*105*"
      - prompt: That answer is incorrect. Please recalculate 15 multiplied by 7.
        checks:
          - match: "*105*"
  - name: add
    prompt: What is 2 + 2?
    checks:
      - or:
          - match: "*4*"
          - match: "*four*"
      - max_tokens: 20
"""

STRICT_EVALS = """\
  - name: exact-answer
    prompt: What is six times seven?
    checks:
      - match: "42"
      - not_match: "*forty*"
  - name: greeting
    prompt: Say hello.
    checks:
      - match: "*hello*"
"""

CONTROL_EVALS = """\
  - name: noisy
    prompt: Print some escapes.
    checks:
      - match: "*done*"
"""

SURROGATE_EVALS = """\
  - name: broken-unicode
    prompt: Say something broken.
    checks:
      - match: "*fine*"
"""

INJECTION_EVALS = """\
  - name: "::warning::eval-name"
    prompt: Say a workflow command.
    checks:
      - match: "*nothing*"
"""

MULTIPLY_BLOCK = """\
Eval 1: multiply
  Turn 1:
    Prompt: What is 15 * 7?
    Response: The answer is 100.
    ❌ FAIL match "*105*"
  Turn 2:
    Prompt: That answer is incorrect. Please recalculate 15 multiplied by 7.
    Response: Sorry, 15 * 7 = 105.
    ✅ PASS match "*105*"
  Overall: ✅ PASS (succeeded on turn 2)
"""


def write_and_record(directory: Path, server: ScriptedServer, evals: str, name: str) -> Path:
    directory.mkdir(parents=True)
    path = directory / f"{name}.eval.yaml"
    path.write_text(suite_text(server.base_url, evals, name=name), encoding="utf-8")
    record(path)
    assert (directory / f"{name}.eval.cassette.yaml").is_file()
    return path


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("recorded")
    with ScriptedServer() as server:
        server.add_rule("The answer is 100.", contains="15 * 7")
        server.add_rule("Sorry, 15 * 7 = 105.", contains="recalculate")
        server.add_rule("4", contains="2 + 2")
        server.add_rule("forty-two", contains="six times seven")
        server.add_rule("hello there", contains="hello")
        server.add_rule("bell\x07 clear\x1b[2J\x1b]0;title\x07 cr\rover done", contains="escapes")
        server.add_rule("lone \ud800 surrogate, fine", contains="broken")
        server.add_rule(
            "::error file=x.py,line=1::pwned\n::add-mask::nothing", contains="workflow command"
        )
        write_and_record(root / "passing", server, MATH_EVALS, "math")
        write_and_record(root / "failing", server, STRICT_EVALS, "strict")
        write_and_record(root / "control", server, CONTROL_EVALS, "noisy")
        write_and_record(root / "surrogate", server, SURROGATE_EVALS, "unicode")
        write_and_record(root / "inject", server, INJECTION_EVALS, "::error::suite-name")
    # A prompt edited after recording: the cassette no longer answers it.
    shutil.copytree(root / "passing", root / "missing")
    path = root / "missing" / "math.eval.yaml"
    path.write_text(path.read_text().replace("What is 2 + 2?", "What is 3 + 3?"), encoding="utf-8")
    yield root


def turncheck(
    *args: str | Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    stderr: int | None = subprocess.PIPE,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turncheck", *map(str, args)],
        cwd=cwd,
        env=env
        if env is not None
        else {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"},
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def run(suites: Path, *args: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return turncheck("run", "--price-timestamp", PRICE_TIME, *args, cwd=suites, **kwargs)


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in (done.stdout or "") + (done.stderr or ""), done.stderr


def summary_table(stdout: str) -> tuple[list[str], dict[str, list[str]]]:
    """Header cells and rows (by first cell) of the summary table."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Suite "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1 :]:
        if line.startswith("Prices:"):
            break
        if set(line) <= {"-", " "}:
            continue
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(header), line
        rows[cells[0]] = cells
    return header, rows


# --- transcript ------------------------------------------------------------------------


def test_transcript_shows_each_turn_check_and_overall_result(suites: Path) -> None:
    done = run(suites, "passing")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert MULTIPLY_BLOCK in out
    assert (
        "Eval 2: add\n"
        "  Turn 1:\n"
        "    Prompt: What is 2 + 2?\n"
        "    Response: 4\n"
        "    ✅ PASS or: at least one of 2 must pass\n"
    ) in out
    add_block = out[out.index("Eval 2: add") :]
    assert re.search(r"✅ PASS match \"\*4\*\"", add_block)
    assert re.search(r"❌ FAIL match \"\*four\*\"", add_block)  # every check is reported
    assert re.search(r"✅ PASS max_tokens 20", add_block)
    assert "  Overall: ✅ PASS (succeeded on turn 1)" in add_block
    assert out.index("Eval 1: multiply") < out.index("Eval 2: add") < out.index("Suite ")


def test_failing_eval_shows_fail_lines_and_exits_one(suites: Path) -> None:
    done = run(suites, "failing")
    assert done.returncode == 1
    assert_no_traceback(done)
    assert (
        "Eval 1: exact-answer\n"
        "  Turn 1:\n"
        "    Prompt: What is six times seven?\n"
        "    Response: forty-two\n"
        '    ❌ FAIL match "42"\n'
        '    ❌ FAIL not_match "*forty*"\n'
        "  Overall: ❌ FAIL (after 1 turn)\n"
    ) in done.stdout
    assert "Eval 2: greeting" in done.stdout
    assert "  Overall: ✅ PASS (succeeded on turn 1)" in done.stdout


def test_quiet_prints_only_the_summary(suites: Path) -> None:
    done = run(suites, "--quiet", "passing")
    assert done.returncode == 0
    assert "Eval 1" not in done.stdout and "Prompt:" not in done.stdout
    assert done.stdout.startswith("Suite ")
    assert "Prices:" in done.stdout


# --- summary table -----------------------------------------------------------------------


def test_summary_table_columns_and_totals_match_the_report(suites: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    done = run(suites, "--json", report_path, "passing", "failing")
    assert done.returncode == 1
    header, rows = summary_table(done.stdout)
    assert header[:5] == ["Suite", "Evals", "Pass", "Fail", "Error"]
    tokens_column = next(i for i, cell in enumerate(header) if cell.startswith("Tokens"))
    cost_column = header.index("Cost")
    assert 4 < tokens_column < cost_column
    assert rows["math"][1:5] == ["2", "2", "0", "0"]
    assert rows["strict"][1:5] == ["2", "1", "1", "0"]
    assert rows["Total"][1:5] == ["4", "3", "1", "0"]

    report = json.loads(report_path.read_text(encoding="utf-8"))
    for suite in report["suites"]:
        row = rows[suite["name"]]
        usage = suite["usage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        assert row[tokens_column] == f"{usage['input_tokens']:,}/{usage['output_tokens']:,}"
        assert row[cost_column].startswith("$")
        assert float(row[cost_column][1:]) == pytest.approx(suite["cost_usd"], rel=0.01, abs=1e-6)
    totals = report["totals"]
    assert rows["Total"][tokens_column] == (
        f"{totals['usage']['input_tokens']:,}/{totals['usage']['output_tokens']:,}"
    )

    prices = [line for line in done.stdout.splitlines() if line.startswith("Prices:")]
    assert prices == [f"Prices: genai-prices {report['price_source']['version']} at {PRICE_TIME}"]


def test_unpriced_model_is_shown_as_unpriced_not_zero(suites: Path, tmp_path: Path) -> None:
    source = suites / "passing" / "math.eval.yaml"
    target = tmp_path / "math.eval.yaml"
    # Same recording, but the model has no known price: replay still answers (the
    # cassette matches on the body, so rewrite the model there too).
    target.write_text(source.read_text().replace("gpt-4o-mini", "house-model-7b"), encoding="utf-8")
    cassette = (suites / "passing" / "math.eval.cassette.yaml").read_text()
    (tmp_path / "math.eval.cassette.yaml").write_text(
        cassette.replace("gpt-4o-mini", "house-model-7b"), encoding="utf-8"
    )
    done = run(tmp_path, "--quiet", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    header, rows = summary_table(done.stdout)
    assert rows["math"][header.index("Cost")] == "unpriced"
    assert "house-model-7b" in done.stdout.split("Prices:")[1]


# --- exit codes --------------------------------------------------------------------------


def test_exit_code_zero_only_when_everything_passes(suites: Path) -> None:
    assert run(suites, "--quiet", "passing").returncode == 0
    assert run(suites, "--quiet", "failing").returncode == 1
    assert run(suites, "--quiet", "missing").returncode == 1
    assert run(suites, "--quiet", "passing", "failing").returncode == 1


def test_invalid_suite_alongside_valid_ones_exits_one_and_reports_the_file(
    suites: Path, tmp_path: Path
) -> None:
    shutil.copytree(suites / "passing", tmp_path / "ok")
    (tmp_path / "bad.eval.yaml").write_text("metadata: {name: x}\nevals: []\n", encoding="utf-8")
    done = run(tmp_path, ".")
    assert done.returncode == 1
    assert_no_traceback(done)
    assert re.search(r"^bad\.eval\.yaml:\d+:\d+: error: ", done.stderr, re.MULTILINE), done.stderr
    assert "Overall: ✅ PASS (succeeded on turn 2)" in done.stdout  # the valid suite still ran


# --- JSON report -------------------------------------------------------------------------


def test_json_report_has_the_documented_fields(suites: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "out" / "nested" / "report.json"
    done = run(suites, "--json", report_path, "passing")
    assert done.returncode == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["schema_version"] == 1
    assert report["mode"] == "replay"
    assert report["price_source"]["timestamp"] == PRICE_TIME
    assert report["price_source"]["library"] == "genai-prices"
    [suite] = report["suites"]
    multiply, add = suite["evals"]
    eval_keys = {
        "name",
        "status",
        "passed_on_turn",
        "error",
        "usage",
        "cost_usd",
        "judge_usage",
        "judge_cost_usd",
        "turns",
    }
    turn_keys = {"prompt", "response", "usage", "cost_usd", "latency_ms", "checks"}
    for result in (multiply, add):
        assert eval_keys <= set(result)
        for turn in result["turns"]:
            assert turn_keys <= set(turn)
            for check in turn["checks"]:
                assert {"type", "passed", "detail"} <= set(check)

    assert (multiply["name"], multiply["status"], multiply["passed_on_turn"]) == (
        "multiply",
        "pass",
        2,
    )
    assert multiply["error"] is None
    first, second = multiply["turns"]
    assert (first["prompt"], first["response"]) == ("What is 15 * 7?", "The answer is 100.")
    assert [(c["type"], c["passed"], c["detail"]) for c in first["checks"]] == [
        ("match", False, 'match "*105*"')
    ]
    assert second["response"] == "Sorry, 15 * 7 = 105."
    assert second["checks"][0]["passed"] is True
    # Usage and cost are summed over the turns; judge usage is separate (none here).
    for field in ("input_tokens", "output_tokens"):
        assert multiply["usage"][field] == first["usage"][field] + second["usage"][field] > 0
    assert multiply["cost_usd"] == pytest.approx(first["cost_usd"] + second["cost_usd"])
    assert multiply["judge_usage"] == {"input_tokens": 0, "output_tokens": 0}
    assert first["latency_ms"] >= 0 and second["latency_ms"] >= 0
    assert (add["status"], add["passed_on_turn"], len(add["turns"])) == ("pass", 1, 1)


# --- replay misses -----------------------------------------------------------------------


def test_replay_miss_is_an_error_naming_the_record_command(suites: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    done = run(suites, "--json", report_path, "missing")
    assert done.returncode == 1
    assert_no_traceback(done)
    suite_path = Path("missing") / "math.eval.yaml"
    error_lines = [line for line in done.stdout.splitlines() if "ERROR" in line]
    assert error_lines, done.stdout
    assert any(f"turncheck record {suite_path}" in line for line in error_lines), error_lines
    # The other eval of the suite is unaffected.
    assert MULTIPLY_BLOCK in done.stdout
    _, rows = summary_table(done.stdout)
    assert rows["math"][1:5] == ["2", "1", "0", "1"]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    add = report["suites"][0]["evals"][1]
    assert add["status"] == "error" and f"turncheck record {suite_path}" in add["error"]


# --- progress ----------------------------------------------------------------------------


def test_progress_is_plain_counter_lines_when_not_a_terminal(suites: Path) -> None:
    done = run(suites, "passing", "failing")
    lines = done.stderr.splitlines()
    assert len(lines) == 4, done.stderr
    counters = [
        re.match(r"^\[(\d+)/(\d+)\] (pass|fail|error) +(\S+) › (\S+)$", line) for line in lines
    ]
    assert all(counters), lines
    assert [(m[1], m[2]) for m in counters if m] == [("1", "4"), ("2", "4"), ("3", "4"), ("4", "4")]
    assert {(m[4], m[5], m[3]) for m in counters if m} == {
        ("math", "multiply", "pass"),
        ("math", "add", "pass"),
        ("strict", "exact-answer", "fail"),
        ("strict", "greeting", "pass"),
    }
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
    # Progress never mixes into stdout, which a user may pipe or redirect.
    assert not re.search(r"^\[\d+/\d+\]", done.stdout, re.MULTILINE)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_on_a_terminal_updates_one_line(suites: Path) -> None:
    master, slave = os.openpty()
    try:
        done = run(suites, "passing", "failing", stderr=slave)
        os.close(slave)
        slave = -1
        chunks = []
        while select.select([master], [], [], 1)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO once the terminal's other end is closed (Linux)
                break
            if not chunk:
                break
            chunks.append(chunk)
        shown = b"".join(chunks).decode("utf-8")
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert done.returncode == 1
    assert "\r\x1b[K[4/4]" in shown
    assert "\n[" not in shown.replace("\r\n", "\n")  # no scrolling counter lines
    assert shown.endswith("\r\x1b[K")  # the counter is cleared before the summary


# --- no API key, no network --------------------------------------------------------------


def test_replay_needs_no_api_key_and_no_environment(suites: Path, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    report_path = tmp_path / "report.json"
    done = run(suites, "--json", report_path, "passing", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert MULTIPLY_BLOCK in done.stdout
    assert "API key" not in done.stdout + done.stderr
    assert json.loads(report_path.read_text(encoding="utf-8"))["totals"]["passed"] == 2


# --- untrusted text ----------------------------------------------------------------------


def test_control_characters_in_model_output_do_not_reach_the_terminal(suites: Path) -> None:
    done = run(suites, "control")
    assert done.returncode == 0, done.stdout + done.stderr
    for raw in ("\x1b", "\x07", "\r"):
        assert raw not in done.stdout
    [response] = [line for line in done.stdout.splitlines() if "Response:" in line]
    # Still readable: the escapes are shown, not dropped.
    assert response == (r"    Response: bell\x07 clear\x1b[2J\x1b]0;title\x07 cr\x0dover done")


def test_lone_surrogate_in_model_output_is_printed_without_traceback(suites: Path) -> None:
    done = run(suites, "surrogate")
    assert_no_traceback(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Response: lone \ufffd surrogate, fine" in done.stdout  # replaced, not crashed


def test_lone_surrogate_in_model_output_does_not_break_the_json_report(
    suites: Path, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"
    done = run(suites, "--json", report_path, "surrogate")
    assert_no_traceback(done)
    assert done.returncode == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["suites"][0]["evals"][0]["status"] == "pass"
    assert report["suites"][0]["evals"][0]["turns"][0]["response"] == "lone \ufffd surrogate, fine"


def test_under_github_actions_output_cannot_run_workflow_commands(suites: Path) -> None:
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    done = run(suites, "inject", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    # The injected text is shown...
    assert "::error file=x.py,line=1::pwned" in done.stdout
    assert "::error::suite-name" in done.stdout.split("\nSuite ")[1]  # summary row
    # ...but none of it would run as a command, on stdout or stderr.
    assert commands_in_log(done.stdout) == []
    assert commands_in_log(done.stderr) == []


# --- the committed examples ----------------------------------------------------------------


def example_suites() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.eval.yaml"))


@pytest.mark.skipif(
    not example_suites()
    or not all(
        p.with_name(p.name.replace(".eval.yaml", ".eval.cassette.yaml")).is_file()
        for p in example_suites()
    ),
    reason="the examples' cassettes are not committed",
)
def test_examples_replay_offline_with_a_consistent_transcript(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    report_path = tmp_path / "report.json"
    done = turncheck("run", "--json", report_path, "examples/", cwd=ROOT, env=env)
    assert_no_traceback(done)
    report = json.loads(report_path.read_text(encoding="utf-8"))
    totals = report["totals"]
    assert done.returncode == (1 if totals["failed"] or totals["errors"] else 0)
    # Protocol suites (examples/flow-gating) are reported under `protocols`.
    assert len(report["suites"]) + len(report["protocols"]) == len(example_suites())
    _, rows = summary_table(done.stdout)
    for suite in report["suites"]:
        assert f"== {suite['path']} — {suite['name']} (" in done.stdout
        section = done.stdout.split(f"== {suite['path']} — ")[1].split("\n== ")[0]
        statuses = [e["status"] for e in suite["evals"]]
        assert rows[suite["name"]][1:5] == [
            str(len(statuses)),
            str(statuses.count("pass")),
            str(statuses.count("fail")),
            str(statuses.count("error")),
        ]
        for index, result in enumerate(suite["evals"], 1):
            block = section.split(f"Eval {index}: {result['name']}\n")[1].split("\nEval ")[0]
            for turn in result["turns"]:
                assert f"  Turn {turn['turn']}:\n    Prompt: " in block
            overall = {
                "pass": f"  Overall: ✅ PASS (succeeded on turn {result['passed_on_turn']})",
                "fail": f"  Overall: ❌ FAIL (failed on turn {result['failed_on_turn']} of "
                if "failed_on_turn" in result else "  Overall: ❌ FAIL (after ",
                "error": "  Overall: 💥 ERROR: ",
            }[result["status"]]
            assert overall in block
    assert "replay" in report["mode"]
