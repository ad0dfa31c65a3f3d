"""Issue 23, defect 9 (the action part): a run of many long answers keeps a bounded
excerpt of each answer in its report, while checks and the next turn see it whole.

The peak memory of the action itself is printed by `benchmarks/hostile.py --only
action-long-answers` (target 500 MB); here the per-turn bound is checked directly.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine_helpers import (
    FAKE_KEY,
    run_paths,
    run_text,
    sent_messages,
    suite_yaml,
    write_suite,
)
from tests.support.protocol_helpers import (
    ANSWERS,
    first_user,
    run_protocol_files,
    script,
    write_protocol,
)
from tests.support.scripted_server import ScriptedServer, ToolCalls
from tests.support.tool_agent import WEATHER_SUITE, latest_results, weather_agent
from turncheck.engine.judge import (
    MAX_KEPT_REASON_CHARS,
    Grade,
    JudgeVerdict,
    parse_grade,
    parse_verdict,
)
from turncheck.report.results import (
    MAX_REPORT_ANSWER_CHARS,
    CheckResult,
    Status,
    TurnResult,
    cut_marker,
    excerpt_answers,
)
from turncheck.report.run import EvalResult
from turncheck.report.spend import Usage

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


LONG_NOTE = "z" * LONG + "END"


def test_a_tool_calls_long_arguments_are_cut_in_the_report_but_seen_whole(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    """The arguments of a tool call are model output too, up to a whole answer's size:
    the report keeps an excerpt of their JSON text, while the tool script and the checks
    got them whole (`*END` is past the cut)."""
    def long_arguments(body: dict[str, Any]) -> str | ToolCalls:
        if latest_results(body):  # the tool's result came back: the final answer
            return weather_agent(body)
        return ToolCalls.one("get_weather", city="Paris", note=LONG_NOTE)

    scripted_server.add_rule(long_arguments, contains="LONG ARGUMENTS")
    scripted_server.add_rule(weather_agent)
    long_call = ("  - name: long\n    prompt: LONG ARGUMENTS\n    checks:\n"
                 "      - tool_call: get_weather\n        args: {note: '*END'}\n"
                 "      - match: '*sunny*'\n")
    [suite] = run_paths([write_suite(tmp_path, WEATHER_SUITE + long_call)],
                        scripted_server).suites
    long = next(result for result in suite.evals if result.name == "long")
    assert long.passed_on_turn == 1
    [call] = long.turns[0].tool_calls
    whole = json.dumps({"city": "Paris", "note": LONG_NOTE}, ensure_ascii=False)
    assert call.arguments == whole[:MAX_REPORT_ANSWER_CHARS] + cut_marker(
        len(whole), "the arguments")
    assert call.arguments_chars == len(whole)
    assert json.loads(call.result or "")["forecast"] == "sunny"  # answered on the whole
    assert len(long.turns[0].model_dump_json()) < 2 * MAX_REPORT_ANSWER_CHARS
    # Short arguments stay a JSON object, with no length field in the report.
    paris = next(result for result in suite.evals if result.name == "paris")
    assert paris.turns[0].tool_calls[0].arguments == {"city": "Paris"}
    assert '"arguments_chars"' not in paris.model_dump_json()


def test_a_check_quoting_a_huge_model_output_keeps_an_excerpt() -> None:
    """Whatever a check quotes (a judge's reason, an error), the report keeps a bounded
    part of it: the per-turn bound holds for every check type."""
    huge = "r" * LONG
    turn = TurnResult(turn=1, prompt="p", response="ok", usage=Usage(), cost_usd=None,
                      latency_ms=1.0, checks=[
                          CheckResult(type="llm_judge", passed=True, detail=huge),
                          CheckResult(type="semantic", passed=False, detail="short",
                                      error=huge)])
    result = an_eval([turn])
    [kept] = excerpt_answers(result).turns
    judged, semantic = kept.checks
    assert judged.detail == huge[:MAX_REPORT_ANSWER_CHARS] + cut_marker(LONG,
                                                                         "the check's detail")
    assert semantic.detail == "short"
    assert semantic.error == huge[:MAX_REPORT_ANSWER_CHARS] + cut_marker(LONG,
                                                                          "the check's error")
    plain = an_eval([turn.model_copy(update={"checks": []})])
    assert excerpt_answers(plain) is plain  # nothing to cut: the same result


def an_eval(turns: list[TurnResult]) -> EvalResult:
    return EvalResult(name="e", prompt="p", status=Status.PASS, passed_on_turn=1, error=None,
                      usage=Usage(), cost_usd=None, judge_usage=Usage(), judge_cost_usd=None,
                      turns=turns)


@pytest.mark.parametrize("parse, answer", [
    (parse_verdict, {"pass": True}),
    (parse_grade, {"score": 2}),
])
def test_a_judge_ignoring_the_reasons_length_keeps_a_bounded_reason(
    parse: Callable[[str], JudgeVerdict | Grade], answer: dict[str, object]
) -> None:
    kept = parse(json.dumps({**answer, "reason": "w" * LONG}))
    assert kept.reason == "w" * MAX_KEPT_REASON_CHARS + "…"
    assert parse(json.dumps({**answer, "reason": "fine"})).reason == "fine"
