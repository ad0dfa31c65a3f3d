"""Simulated users (docs/suites.md, "Simulated users") against the scripted server, which
plays both the model under test and the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.engine_helpers import only_eval, run_paths, run_text, suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer, user_turns
from turncheck.formats.budget import BudgetLimits
from turncheck.providers.call_context import CALLER_HEADER
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.results import Ending, Status, StatusReason
from turncheck.report.run import EvalResult, Report
from turncheck.report.spend import Usage

SIMULATOR_USAGE = (1000, 100)
TARGET_USAGE = (10, 5)


def is_simulator(body: dict[str, Any]) -> bool:
    return "turncheck-simulated-user" in body["messages"][0]["content"]


def answered(body: dict[str, Any]) -> int:
    """How many assistant answers the simulator has seen."""
    return str(body["messages"][-1]["content"]).count("ASSISTANT:")


def simulator_reply(stop_after: int | None = None, empty_at: int | None = None):  # type: ignore[no-untyped-def]
    """The simulator: asks about the refund until it has seen `stop_after` answers, then
    stops with the goal met; an empty message after `empty_at` answers."""
    def reply(body: dict[str, Any]) -> str:
        seen = answered(body)
        if stop_after is not None and seen >= stop_after:
            return json.dumps({"message": "", "stop": True, "reason": "goal_met"})
        message = "" if seen == empty_at else f"Message {seen + 1}: refund order 42 please"
        return json.dumps({"message": message, "stop": False, "reason": ""})
    return reply


def target_reply(body: dict[str, Any]) -> str:
    """The model under test: approves the refund on the third user message."""
    return "Your refund approved." if user_turns(body) >= 3 else "Let me check that."


def serve(server: ScriptedServer, stop_after: int | None = 3,
          empty_at: int | None = None) -> None:
    server.add_rule(simulator_reply(stop_after, empty_at), when=is_simulator,
                    usage=SIMULATOR_USAGE)
    server.add_rule(target_reply, usage=TARGET_USAGE)


def refund_suite(max_turns: int = 5, extra: str = "") -> str:
    return suite_yaml(
        "  - name: refund\n"
        "    user:\n"
        "      persona: A customer, polite but in a hurry.\n"
        "      goal: Get a refund for order 42.\n"
        f"      max_turns: {max_turns}\n"
        f"{extra}"
        "    success:\n"
        "      - match: '*refund approved*'\n",
        metadata="  simulator: {model: sim-model, temperature: 0, seed: 7}\n")


def test_goal_met_on_turn_3_passes_on_turn_3(tmp_path: Path,
                                             scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=3)
    result = only_eval(run_text(tmp_path, refund_suite(), scripted_server))
    assert (result.status, result.passed_on_turn, len(result.turns)) == (Status.PASS, 3, 3)
    assert result.conversation is not None
    assert (result.conversation.ending, result.conversation.turns) == (Ending.GOAL_MET, 3)
    assert [check.passed for check in result.conversation.success] == [True]
    assert result.turns[0].prompt == "Message 1: refund order 42 please"
    simulator_calls = [r for r in scripted_server.requests if is_simulator(r.json)]
    assert {r.json["model"] for r in simulator_calls} == {"sim-model"}
    assert {r.json.get("seed") for r in simulator_calls} == {7}


def test_goal_never_met_fails_at_max_turns_with_that_ending(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=None)
    result = only_eval(run_text(tmp_path, refund_suite(max_turns=4), scripted_server))
    assert (result.status, result.passed_on_turn, len(result.turns)) == (Status.FAIL, None, 4)
    assert result.conversation is not None
    assert result.conversation.ending is Ending.MAX_TURNS
    # The success checks were still judged at the end (not "0 of N met" unasked).
    assert [check.passed for check in result.conversation.success] == [True]


def test_empty_simulator_message_is_a_simulator_error_not_a_fail(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=None, empty_at=1)
    result = only_eval(run_text(tmp_path, refund_suite(), scripted_server))
    assert result.status is Status.ERROR
    assert result.reason == StatusReason.SIMULATOR
    assert result.conversation is not None
    assert result.conversation.ending is Ending.SIMULATOR_ERROR
    assert "empty" in (result.error or "")


def test_a_stop_before_min_turns_is_unusable(tmp_path: Path,
                                             scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=1)
    result = only_eval(run_text(tmp_path, refund_suite(extra="      min_turns: 2\n"),
                                scripted_server))
    assert (result.status, result.reason) == (Status.ERROR, StatusReason.SIMULATOR)
    assert result.conversation is not None
    assert result.conversation.ending is Ending.MIN_TURNS_NOT_REACHED


def test_simulator_tokens_are_counted_apart_from_the_model_under_test(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=3)
    report = run_text(tmp_path, refund_suite(), scripted_server)
    result = only_eval(report)
    # Three answers of the model under test; four simulator calls (three messages, a stop).
    assert result.usage == Usage(input_tokens=30, output_tokens=15)
    assert result.simulator_usage == Usage(input_tokens=4000, output_tokens=400)
    spend = result.spend
    assert (spend.tokens, spend.simulator_tokens) == (45, 4400)
    assert report.totals.simulator_usage.total == 4400
    assert report.totals.usage.total == 45


def _stable(report: Report) -> list[dict[str, Any]]:
    def one(result: EvalResult) -> dict[str, Any]:
        data = result.model_dump(mode="json", exclude={"turns"})
        data["turns"] = [t.model_dump(mode="json", exclude={"latency_ms"}) for t in result.turns]
        return data
    return [one(result) for suite in report.suites for result in suite.evals]


def test_record_then_replay_with_the_server_stopped_gives_an_identical_report(
        tmp_path: Path) -> None:
    path = write_suite(tmp_path, refund_suite())
    with ScriptedServer() as server:
        serve(server, stop_after=3)
        recorded = run_paths([path], server, mode="record")
        url = server.base_url
    replayed = run_paths([path], None, mode="replay", base_url=url)
    assert only_eval(recorded).status is Status.PASS
    assert replayed.live_tokens == 0
    assert _stable(replayed) == _stable(recorded)
    cassette = yaml.safe_load(cassette_path_for(path).read_text(encoding="utf-8"))
    callers = [i["request"]["headers"].get(CALLER_HEADER) for i in cassette["interactions"]]
    assert callers.count(["simulator"]) == 4  # labelled as the simulator's
    assert callers.count(None) == 3  # the model under test's answers


def test_a_failing_each_turn_check_fails_the_eval_though_the_goal_was_met(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=3)
    result = only_eval(run_text(tmp_path, refund_suite(extra="    each_turn: [{not_match: "
                                                       "'*check*'}]\n"), scripted_server))
    assert (result.status, result.passed_on_turn) == (Status.FAIL, None)
    assert result.conversation is not None
    assert result.conversation.ending is Ending.GOAL_MET
    assert "turn 1 failed its each_turn checks" in (result.conversation.detail or "")


def test_a_target_error_ends_the_conversation_as_an_error(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(simulator_reply(None), when=is_simulator)
    scripted_server.add_rule(fault="bad_request")
    result = only_eval(run_text(tmp_path, refund_suite(), scripted_server))
    assert result.status is Status.ERROR and result.reason is None
    assert result.conversation is not None
    assert result.conversation.ending is Ending.TARGET_ERROR


def test_an_unusable_sample_is_left_out_of_the_pass_rate_never_a_failure(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    # The first simulator call of the run answers an empty message: one of three samples.
    scripted_server.add_rule(json.dumps({"message": "", "stop": False, "reason": ""}),
                             when=is_simulator, times=1)
    serve(scripted_server, stop_after=3)
    suite = refund_suite().replace("  simulator:", "  repeat: 3\n  simulator:")
    result = only_eval(run_text(tmp_path, suite, scripted_server))
    assert result.repeats is not None
    assert (result.repeats.passes, result.repeats.samples, result.repeats.unusable) == (2, 2, 1)
    assert result.status is not Status.FAIL
    endings = [s.conversation.ending for s in result.samples if s.conversation is not None]
    assert sorted(endings) == [Ending.GOAL_MET, Ending.GOAL_MET, Ending.SIMULATOR_ERROR]


def test_the_users_texts_are_rendered_with_the_suites_vars(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=1)
    suite = refund_suite().replace(
        "persona: A customer, polite but in a hurry.",
        "persona: \"{{var('who')}}, polite but in a hurry.\"\n"
        "      opening: ['Hi, I am {{var(\"who\")}}']",
    ).replace("  simulator:", "  vars: {who: Ada}\n  simulator:")
    result = only_eval(run_text(tmp_path, suite, scripted_server))
    assert result.turns[0].prompt == "Hi, I am Ada"
    assert result.simulator is not None
    assert result.simulator.persona == "Ada, polite but in a hurry."
    [first] = [r for r in scripted_server.requests if is_simulator(r.json)][:1]
    assert "Persona: Ada, polite" in first.json["messages"][0]["content"]


def test_a_budget_stop_of_the_simulators_call_skips_the_eval(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    serve(scripted_server, stop_after=3)
    result = only_eval(run_text(tmp_path, refund_suite(), scripted_server,
                                budget=BudgetLimits(max_live_tokens=0)))
    assert (result.status, result.reason) == (Status.SKIPPED, "budget")
    assert scripted_server.requests == []  # nothing was sent


def test_a_review_that_finds_the_simulator_out_of_its_role_makes_the_sample_unusable(
        tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(json.dumps({"pass": False, "reason": "it answered as the bot"}),
                             when=lambda body: "turncheck-simulator-review" in str(body))
    serve(scripted_server, stop_after=3)
    result = only_eval(run_text(tmp_path, refund_suite().replace(
        "    success:", "    review: true\n    success:"), scripted_server))
    assert (result.status, result.reason) == (Status.ERROR, StatusReason.SIMULATOR)
    assert result.conversation is not None and result.conversation.review is not None
    assert result.conversation.review.passed is False
    assert result.conversation.ending is Ending.GOAL_MET  # how it ended; unusable all the same
    assert result.judge_usage.total > 0  # the review is the judge's call
