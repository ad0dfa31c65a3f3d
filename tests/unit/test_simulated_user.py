"""Simulated users: the suite syntax's rules, the simulator's answers, what makes two
sides not like-for-like (docs/suites.md, "Simulated users")."""

from __future__ import annotations

import json

import pytest

from turncheck.compare.evals import compare_evals, simulator_change
from turncheck.engine.simulated_user import (
    SimulatorUnusable,
    parse_decision,
    setup_of,
    simulator_messages,
)
from turncheck.formats.suite_loader import parse_suite
from turncheck.render.display import (
    SIMULATOR_LABEL,
    SIMULATOR_TOKENS_LABEL,
    TOKENS_LABEL,
    Money,
)
from turncheck.render.html_report import eval_row
from turncheck.report.results import CheckResult, ConversationEnd, Ending, SimulatorSetup, Status
from turncheck.report.rows import Transition
from turncheck.report.run import EvalResult
from turncheck.report.spend import Spend, Usage

HEADER = "metadata:\n  name: s\n  model: m\n  simulator: {model: sim, temperature: 0.2}\n"
USER = ("  - name: refund\n    user:\n      persona: A customer.\n      goal: A refund.\n"
        "    success: [{match: '*refund*'}]\n")


def messages(text: str) -> list[str]:
    return [d.message for d in parse_suite(text, "s.eval.yaml").diagnostics]


def test_a_simulated_user_eval_is_valid_and_takes_the_suites_simulator() -> None:
    loaded = parse_suite(HEADER + "evals:\n" + USER, "s.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    [evaluation] = loaded.suite.evals
    assert evaluation.user is not None
    setup = setup_of(loaded.suite.metadata, evaluation.user)
    assert (setup.model, setup.temperature, evaluation.user.max_turns) == ("sim", 0.2, 6)


@pytest.mark.parametrize(("evals", "expected"), [
    (USER + "    prompt: hi\n", '"prompt" cannot be used with "user"'),
    (USER.replace("      goal: A refund.\n", ""), "needs a `goal` or `instructions`"),
    (USER.replace("    success: [{match: '*refund*'}]\n", ""), 'missing required key "success"'),
    (USER.replace("  - name: refund\n", "  -\n"), "needs a `name`"),
    (USER.replace("      goal", "      max_turns: 21\n      goal"), "max_turns"),
    (USER.replace("      goal", "      min_turns: 5\n      max_turns: 3\n      goal"),
     "min_turns (5) is above max_turns (3)"),
    (USER.replace("[{match: '*refund*'}]",
                  "[{match: x, prompt: again, checks: [{match: y}]}]"), "take no follow-up"),
    ("  - prompt: hi\n    checks: [{match: x}]\n    success: [{match: x}]\n",
     '"success" needs "user"'),
])
def test_one_form_per_eval_and_clear_errors(evals: str, expected: str) -> None:
    assert any(expected in message for message in messages(HEADER + "evals:\n" + evals)), \
        messages(HEADER + "evals:\n" + evals)


def test_a_simulator_model_is_required() -> None:
    header = HEADER.replace("  simulator: {model: sim, temperature: 0.2}\n", "")
    assert any("needs its model" in m for m in messages(header + "evals:\n" + USER))


@pytest.mark.parametrize(("answer", "message", "stop", "reason"), [
    ('{"message": "Hello", "stop": false, "reason": ""}', "Hello", False, ""),
    ('```json\n{"message": "", "stop": true, "reason": "goal_met"}\n```', "", True, "goal_met"),
    ("Where is my refund?", "Where is my refund?", False, ""),
    ("Thanks, bye! ###STOP###", "Thanks, bye!", True, ""),
    ('{"message": "ok ###STOP###", "stop": false, "reason": ""}', "ok", True, ""),
])
def test_the_simulators_answer_is_json_or_plain_text(answer: str, message: str, stop: bool,
                                                     reason: str) -> None:
    decision = parse_decision(answer)
    assert (decision.message, decision.stop, decision.reason) == (message, stop, reason)


@pytest.mark.parametrize("answer", [
    '{"message": "", "stop": false, "reason": ""}', "   ",
    '{"message": 3, "stop": false, "reason": ""}', '{"message": "x", "stop": "no"}',
])
def test_an_empty_or_invalid_simulator_answer_is_unusable(answer: str) -> None:
    with pytest.raises(SimulatorUnusable):
        parse_decision(answer)


def test_a_stop_names_its_ending() -> None:
    assert parse_decision('{"message": "", "stop": true, "reason": "gave_up"}').ending \
        is Ending.GAVE_UP
    assert parse_decision("###STOP###").ending is Ending.GOAL_MET


def test_the_simulator_reads_its_brief_and_the_conversation_as_text() -> None:
    setup = SimulatorSetup(model="sim", prompt_version="v", persona="P", goal="G")
    system, user = simulator_messages(setup, [])
    assert "Persona: P" in system.content and "Goal: G" in system.content
    assert "has not started" in user.content
    assert '"stop": false' in user.content


def _result(persona: str, status: Status, turn: int | None) -> EvalResult:
    setup = SimulatorSetup(model="sim", prompt_version="v", persona=persona, goal="G")
    return EvalResult(name="refund", prompt="G", status=status, passed_on_turn=turn,
                      error=None, simulator=setup)


def test_a_changed_persona_is_not_like_for_like_and_never_a_regression() -> None:
    base, head = _result("polite", Status.PASS, 3), _result("angry", Status.FAIL, None)
    assert simulator_change(base, head) == "the simulator's persona changed"
    row = compare_evals("s.eval.yaml", base, head)
    assert row.transition is Transition.NOT_LIKE_FOR_LIKE
    assert row.regression is False
    same = compare_evals("s.eval.yaml", base, _result("polite", Status.FAIL, None))
    assert same.transition is Transition.BROKEN and same.regression


def test_the_html_report_says_how_it_ended_and_what_the_simulator_spent() -> None:
    head = _result("polite", Status.PASS, 3).model_copy(update={
        "conversation": ConversationEnd(ending=Ending.GOAL_MET, turns=3),
        "simulator_usage": Usage(input_tokens=400, output_tokens=20),
        "simulator_cost_usd": None})
    row = eval_row("s", "refund", None, head)
    assert "ended: goal met after 3 turns" in row.facts
    facts = row.facts
    assert "simulated user (sim): 420 tokens, unpriced" in facts


def test_the_html_report_shows_each_sides_ending_and_success_checks() -> None:
    judged = CheckResult(type="match", detail='match "*refund*"', passed=False)
    ended = ConversationEnd(ending=Ending.MAX_TURNS, turns=4, success=[judged])
    base = _result("polite", Status.PASS, 3).model_copy(update={
        "conversation": ConversationEnd(ending=Ending.GOAL_MET, turns=3)})
    head = _result("polite", Status.FAIL, None).model_copy(update={"conversation": ended})
    endings = eval_row("s", "refund", base, head).endings
    assert [(e.side, e.text) for e in endings] == [
        ("base", "ended: goal met after 3 turns"),
        ("head", "ended: max_turns reached after 4 turns")]
    assert [(c.passed, c.text) for c in endings[1].checks] == [(False, 'match "*refund*"')]


def test_the_comment_cost_table_shows_the_simulator_apart() -> None:
    side = Spend(tokens=45, simulator_tokens=4_400, simulator_cost_usd=0.002,
                 total_cost_usd=0.003, cost_usd=0.001)
    labels = [line.label for line in Money(side, side, True).lines()]
    assert labels == ["Model", SIMULATOR_LABEL, "**Total**", TOKENS_LABEL,
                      SIMULATOR_TOKENS_LABEL]
    plain = Spend(tokens=45, cost_usd=0.001, total_cost_usd=0.001)
    assert SIMULATOR_TOKENS_LABEL not in [line.label for line in Money(plain, plain, True).lines()]


@pytest.mark.parametrize("reason", ["goal_met", "goal met", "Goal met.", "gave up", "Gave_up!"])
def test_a_stop_reason_that_only_names_the_ending_is_not_repeated_as_its_detail(
        reason: str) -> None:
    """Issue 44, item 8: "Ended: goal met after 2 turns — goal met"."""
    decision = parse_decision(json.dumps({"message": "", "stop": True, "reason": reason}))
    assert decision.detail is None


def test_a_stop_reason_that_says_more_is_the_detail() -> None:
    decision = parse_decision(json.dumps({"message": "", "stop": True,
                                          "reason": "the refund was confirmed"}))
    assert decision.detail == "the refund was confirmed"
