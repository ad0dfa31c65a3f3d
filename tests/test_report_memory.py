"""Issue 23, defect 9 (the action part): a run of many long answers keeps a bounded
excerpt of each answer in its report, while checks and the next turn see it whole.

The peak memory of the action itself is printed by `benchmarks/hostile.py --only
action-long-answers` (target 500 MB); here the per-turn bound is checked directly.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from tests.engine_helpers import FAKE_KEY, run_text, sent_messages, suite_yaml
from tests.protocol_helpers import ANSWERS, first_user, run_protocol_files, script, write_protocol
from tests.scripted_server import ScriptedServer
from turncheck.engine.results import MAX_REPORT_ANSWER_CHARS, cut_marker

LONG = 100_000
FIRST_ANSWER = "y" * (LONG - 4) + "TAIL"
EVALS = (
    "  - name: follow\n"
    "    prompt: long first\n"
    "    checks:\n"
    "      - match: '*done*'\n"
    "      - prompt: again\n"
    "        checks: [{match: '*done*'}]\n"
    "  - name: tail\n"
    "    prompt: long tail\n"
    "    checks: [{match: '*done*'}]\n"
)


def long_answers(server: ScriptedServer) -> ScriptedServer:
    server.add_rule(FIRST_ANSWER, contains="long first")
    server.add_rule("x" * (LONG - 4) + "done", contains="long tail")
    server.add_rule("done", contains="again")
    return server


def test_the_report_keeps_an_excerpt_and_the_next_turn_gets_the_whole_answer(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    report = run_text(tmp_path, suite_yaml(EVALS), long_answers(scripted_server),
                      concurrency=1)
    follow, tail = report.suites[0].evals
    first, second = follow.turns
    assert first.response == FIRST_ANSWER[:MAX_REPORT_ANSWER_CHARS] + cut_marker(LONG)
    assert first.response_chars == LONG
    assert "the answer had 100,000 characters; the report keeps the first 8,000" in (
        first.response)
    # The conversation went on with the whole answer, not the report's excerpt.
    assistant = [m for m in sent_messages(scripted_server, 1) if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == [FIRST_ANSWER]
    assert follow.passed_on_turn == 2
    # A short answer is kept as it was, with no length field in the JSON report.
    assert second.response == "done" and second.response_chars is None
    assert '"response_chars"' not in second.model_dump_json()
    assert f'"response_chars":{LONG}' in first.model_dump_json()
    # The check saw the whole answer: `done` is past the excerpt.
    assert tail.passed_on_turn == 1 and "done" not in tail.turns[0].response[:-200]


def test_a_secret_at_the_cut_is_redacted_before_the_answer_is_cut(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    """Cut first, the key's first characters (too short to be recognised as a piece of
    it) would end the excerpt."""
    before = MAX_REPORT_ANSWER_CHARS - 8
    scripted_server.add_rule("a" * before + FAKE_KEY + "b" * LONG)
    report = run_text(tmp_path, suite_yaml("  - name: echo\n    prompt: hi\n"
                                           "    checks: [{match: '*done*'}]\n"),
                      scripted_server)
    response = report.suites[0].evals[0].turns[0].response
    assert response.startswith("a" * before + "[REDACTED]"[:8] + "\n... [cut")
    assert FAKE_KEY[:8] not in response


def many_long_answers(evals: int) -> str:
    return suite_yaml("".join(f"  - name: e{i}\n    prompt: 'question {i}'\n"
                              "    checks: [{match: '*done*'}]\n" for i in range(evals)))


def test_the_report_of_many_long_answers_holds_a_bounded_amount_per_turn(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    """The memory a finished run keeps (its report) per turn of 100 k characters: about
    the excerpt, not the answer (without the cut: over 100 KB a turn). Taken as the
    difference between a run of 20 and one of 120 evals, so what the first run loads
    (modules, price tables) is not counted."""
    scripted_server.add_rule("z" * LONG)
    kept = []
    reports = []
    tracemalloc.start()
    try:
        for evals in (20, 120):
            before = tracemalloc.get_traced_memory()[0]
            reports.append(run_text(tmp_path, many_long_answers(evals), scripted_server,
                                    concurrency=4))
            kept.append(tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()
    assert [sum(len(e.turns) for e in r.suites[0].evals) for r in reports] == [20, 120]
    per_turn = (kept[1] - kept[0]) / 100
    assert per_turn < 4 * MAX_REPORT_ANSWER_CHARS, f"{per_turn:,.0f} bytes kept per turn"


def test_a_protocol_case_scores_the_whole_answer_and_reports_an_excerpt(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    """The gates come after 100 k characters of blank lines: past the excerpt, yet
    scored, and sent back whole in the next turn."""
    gates = ANSWERS["CASE-C"][1]
    padded = "\n" * LONG + gates
    script(scripted_server, {**ANSWERS, "CASE-C": {**ANSWERS["CASE-C"], 1: padded}})
    report = run_protocol_files([write_protocol(tmp_path)], scripted_server)
    [suite] = report.protocols
    first = next(c for c in suite.cases if c.id == "clean").turns[0]
    assert first.items == ["Time", "Singlets", "Live", "Lymphocytes"]
    assert first.response_chars == len(padded)
    assert first.response == "\n" * MAX_REPORT_ANSWER_CHARS + cut_marker(len(padded))
    second = [r.json for r in scripted_server.requests
              if "[CASE-C]" in first_user(r.json) and len(r.json["messages"]) == 3]
    assert second and second[0]["messages"][1] == {"role": "assistant", "content": padded}
