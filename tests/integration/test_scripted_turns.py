"""Scripted turns (`turns:` in an eval, docs/suites.md) against the scripted server: every
turn is sent in order with its own checks, the eval reports the first turn that failed,
and what is recorded replays identically with the server stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.engine_helpers import (
    only_eval,
    run_paths,
    run_text,
    sent_messages,
    suite_yaml,
    write_suite,
)
from tests.support.scripted_server import ScriptedServer, ToolCalls
from tests.support.target_helpers import comparable, http_target, memory_reply, upstream_env
from turncheck.compare.comparison import compare_reports
from turncheck.github.annotations import collect_annotations
from turncheck.render.compare_console import comparison_text
from turncheck.render.console import eval_lines, failing_lines
from turncheck.render.html_report import render_report
from turncheck.render.junit import junit_xml
from turncheck.report.results import Status
from turncheck.report.run import Report

TRAVEL = """\
  - name: travel post
    turns:
      - prompt: Compose a short travel post about Hawaii.
        checks: [{match: "*Hawaii*"}]
      - prompt: Rewrite it starting every sentence with the letter A.
        checks: [{match: "A*"}]
"""
VOLATILE = {"latency_ms", "first_token_ms", "started_at", "duration_s", "run_id", "live_tokens",
            "mode", "price_source"}


def steady(value: Any) -> Any:
    """A report's JSON without what differs between a record and its replay (timings)."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def travel_server() -> ScriptedServer:
    server = ScriptedServer().start()
    server.add_rule("Hawaii: surf at dawn, poke for lunch.", contains="Hawaii")
    server.add_rule("Sunsets in Hawaii are the best.", contains="letter A")
    return server


def travel_reports(tmp_path: Path, *suites: str) -> list[Report]:
    """Each suite run (live) against the travel server, in order."""
    server = travel_server()
    try:
        return [run_text(tmp_path, suite, server) for suite in suites]
    finally:
        server.stop()


def broken_travel(tmp_path: Path) -> tuple[Report, Report]:
    """A base whose second turn passes (any answer) and a head where it fails."""
    base, head = travel_reports(tmp_path, suite_yaml(TRAVEL.replace('"A*"', '"*"')),
                                suite_yaml(TRAVEL))
    return base, head


def test_a_failing_second_turn_fails_on_turn_2_and_replays_identically(tmp_path: Path) -> None:
    server = travel_server()
    path = write_suite(tmp_path, suite_yaml(TRAVEL))
    recorded = run_paths([path], server, mode="record")
    second_request = sent_messages(server, 1)
    server.stop()
    replayed = run_paths([path], server, mode="replay")  # stopped: all from the cassette

    result = only_eval(recorded)
    assert (result.status, result.failed_on_turn, result.passed_on_turn) == (Status.FAIL, 2, None)
    assert [t.passed for t in result.turns] == [True, False]
    # Turn 2 is sent after turn 1's answer, in one conversation.
    assert second_request == [
        {"role": "user", "content": "Compose a short travel post about Hawaii."},
        {"role": "assistant", "content": "Hawaii: surf at dawn, poke for lunch."},
        {"role": "user", "content": "Rewrite it starting every sentence with the letter A."},
    ]
    assert steady(replayed.model_dump(mode="json")) == steady(recorded.model_dump(mode="json"))
    assert replayed.live_tokens == 0
    lines = list(eval_lines(1, only_eval(replayed)))
    assert lines[-1] == "  Overall: ❌ FAIL (failed on turn 2 of 2)"


def test_without_scripted_turns_the_second_message_is_never_sent(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    # The same eval as a follow-up: turn 1 passes, so the rewrite is never asked for.
    scripted_server.add_rule("Hawaii: surf at dawn.", contains="Hawaii")
    report = run_text(tmp_path, suite_yaml(
        "  - prompt: Compose a short travel post about Hawaii.\n"
        "    checks:\n"
        "      - match: '*Hawaii*'\n"
        "      - prompt: Rewrite it starting every sentence with the letter A.\n"
        "        checks: [{match: 'A*'}]\n"), scripted_server)
    assert (only_eval(report).status, len(scripted_server.requests)) == (Status.PASS, 1)


def test_every_turn_is_sent_after_a_failed_one_and_the_first_failure_is_named(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("I would rather not.", contains="first")
    scripted_server.add_rule("Fine: 42.", contains="second")
    report = run_text(tmp_path, suite_yaml(
        "  - name: three\n"
        "    turns:\n"
        "      - {prompt: first, checks: [{match: '*42*'}]}\n"
        "      - {prompt: second, checks: [{match: '*42*'}]}\n"
        "      - {prompt: third, checks: [{match: '*42*'}]}\n"), scripted_server)
    result = only_eval(report)
    assert [t.prompt for t in result.turns] == ["first", "second", "third"]
    assert [t.passed for t in result.turns] == [False, True, False]
    assert (result.status, result.failed_on_turn) == (Status.FAIL, 1)
    assert result.prompt == "first" and result.name == "three"


def test_a_turns_follow_up_fires_inside_that_turn_and_the_script_goes_on(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("100", contains="15 * 7")
    scripted_server.add_rule("105", contains="Try again")
    scripted_server.add_rule("210", contains="Double it")
    report = run_text(tmp_path, suite_yaml(
        "  - name: multiply\n"
        "    turns:\n"
        "      - prompt: What is 15 * 7?\n"
        "        checks:\n"
        "          - match: '*105*'\n"
        "            prompt: Try again.\n"
        "            checks: [{match: '*105*'}]\n"
        "      - prompt: Double it.\n"
        "        checks: [{match: '*210*'}]\n"), scripted_server)
    result = only_eval(report)
    assert [t.prompt for t in result.turns] == ["What is 15 * 7?", "Try again.", "Double it."]
    assert (result.status, result.passed_on_turn, result.failed_on_turn) == (Status.PASS, 3, None)
    assert sent_messages(scripted_server, 2)[-2:] == [
        {"role": "assistant", "content": "105"}, {"role": "user", "content": "Double it."}]


def test_judge_and_tool_checks_apply_to_their_own_turn(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule('{"pass": false, "reason": "no umbrella advice"}',
                             when=lambda body: "evaluator" in str(body))
    scripted_server.add_rule(ToolCalls.one("get_weather", city="Oslo"), contains="Oslo",
                             when=lambda body: body["messages"][-1]["role"] == "user")
    scripted_server.add_rule("Rain in Oslo.", contains="Oslo")
    scripted_server.add_rule("Take a coat.", contains="umbrella")
    metadata = (
        "  tools:\n"
        "    - type: function\n"
        "      function: {name: get_weather, parameters: {type: object, properties: {city: "
        "{type: string}}}}\n"
        "  tool_results:\n"
        "    get_weather: [{result: rain}]\n")
    report = run_text(tmp_path, suite_yaml(
        "  - name: weather\n"
        "    turns:\n"
        "      - prompt: Weather in Oslo?\n"
        "        checks: [{tool_call: get_weather, args: {city: Oslo}}]\n"
        "      - prompt: Do I need an umbrella?\n"
        "        checks:\n"
        "          - no_tool_call: '*'\n"
        "          - llm_judge: {criteria: recommends an umbrella}\n", metadata=metadata),
        scripted_server)
    result = only_eval(report)
    first, second = result.turns
    assert [c.name for c in first.tool_calls] == ["get_weather"] and not second.tool_calls
    assert [c.passed for c in first.checks] == [True]
    assert [(c.type, c.passed) for c in second.checks] == [("no_tool_call", True),
                                                            ("llm_judge", False)]
    assert second.judge_usage.total > 0 and first.judge_usage.total == 0
    assert (result.status, result.failed_on_turn) == (Status.FAIL, 2)


def test_repeats_report_each_samples_failed_turn(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("Hawaii!", contains="Hawaii")
    scripted_server.add_rule("Nope.", contains="letter A")
    report = run_text(tmp_path, suite_yaml(TRAVEL, metadata="  repeat: 3\n"), scripted_server)
    result = only_eval(report)
    assert result.repeats is not None and result.repeats.samples == 3
    assert [s.failed_on_turn for s in result.samples] == [2, 2, 2]
    assert (result.status, result.failed_on_turn) == (Status.FAIL, 2)


def test_a_budget_stops_the_script_between_turns(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("Hawaii!" * 5, contains="Hawaii", usage=(20, 30))
    scripted_server.add_rule("A fine day.", contains="letter A")
    report = run_text(tmp_path, suite_yaml(TRAVEL, metadata=(
        "  max_output_tokens: 40\n  budget: {max_live_tokens: 150}\n")), scripted_server)
    result = only_eval(report)
    assert result.status is Status.SKIPPED
    assert [t.prompt for t in result.turns] == ["Compose a short travel post about Hawaii."]
    assert len(scripted_server.requests) == 1


def test_junit_and_the_failed_list_name_the_failed_turn(tmp_path: Path) -> None:
    [report] = travel_reports(tmp_path, suite_yaml(TRAVEL))
    assert 'message="❌ FAIL (failed on turn 2 of 2)"' in junit_xml(report)
    [failed] = failing_lines(report)[1:]
    assert failed.endswith("scripted.eval.yaml:7): failed on turn 2 of 2")
    assert "travel post" in failed


SCRIPTED_MEMORY = """\
evals:
  - name: remembers
    turns:
      - prompt: My name is Ada.
        checks: [{match: "Noted."}]
      - prompt: I live in Paris.
        checks: [{match: "Noted."}]
      - prompt: What do you know about me?
        checks: [{match: "*You are Ada from Paris*"}]
"""


def test_each_scripted_turn_is_one_request_to_a_stateful_app_and_replays(
        tmp_path: Path) -> None:
    # The app gets only the newest message (stateful) and answers from its session.
    suite = write_suite(tmp_path, http_target({"APP_API": "chat"}) + SCRIPTED_MEMORY)
    with ScriptedServer(default_reply=memory_reply) as server:
        recorded = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        calls = len(server.requests)
    replayed = run_paths([suite], None, "replay", env=upstream_env(server.base_url))
    result = only_eval(recorded)
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error
    assert [t.response for t in result.turns] == ["Noted.", "Noted.", "You are Ada from Paris."]
    assert [t.app_model_calls for t in result.turns] == [1, 1, 1] and calls == 3
    assert comparable(replayed) == comparable(recorded)


def test_the_html_report_names_the_failed_turn(tmp_path: Path) -> None:
    [report] = travel_reports(tmp_path, suite_yaml(TRAVEL))
    html = render_report(head=report)
    assert "failed on turn 2" in html
    assert "Rewrite it starting every sentence with the letter A." in html


def test_a_comparison_says_which_scripted_turn_broke(tmp_path: Path) -> None:
    base, head = broken_travel(tmp_path)
    text = comparison_text(compare_reports(base, head))
    [row] = [line for line in text.splitlines() if "travel post" in line]
    assert "2→fail@2" in row and "broken" in row


def test_the_check_run_annotates_the_prompt_of_the_turn_that_failed(tmp_path: Path) -> None:
    base, head = broken_travel(tmp_path)
    [annotation] = collect_annotations(compare_reports(base, head), "", head)
    turn_two = suite_yaml(TRAVEL).splitlines().index(
        "      - prompt: Rewrite it starting every sentence with the letter A.") + 1
    assert (annotation.start_line, annotation.end_line) == (turn_two, turn_two)
    assert "now fails on turn 2 of 2" in annotation.message
    assert 'turn 2: check match "A*" failed' in annotation.message
