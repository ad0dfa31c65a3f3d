"""Checks on what the app did (docs/suites.md): against a real app on the official
`openai` SDK that runs its tools itself and reports none of its tool calls, the tool and
trajectory checks judge the tool calls the model asked for in the app's model calls, and
each fails on a head of the app that breaks it, with a reason naming the call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.refund_helpers import refund_model, refund_target
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import upstream_env
from turncheck.report.results import CheckResult, Status
from turncheck.report.run import Report

CHECKED_TURNS = """\
evals:
  - name: refund
    turns:
      - prompt: Hi there.
        checks:
          - match: "*help*"
          - max_model_calls: 1
      - prompt: Please refund order A1.
        checks:
          - tool_call: lookup_order
          - tool_sequence: [lookup_order, issue_refund]
          - no_loop: 2
          - max_tool_calls: 1
            tool: lookup_order
          - max_model_calls: 3
          - model_used: "gpt-4o*"
          - system_prompt: {contains: refund desk}
          - max_turn_tokens: 5000
      - prompt: Thanks.
        checks:
          - max_model_calls: 1
          - tool_sequence: [lookup_order, issue_refund]
            scope: conversation
  - name: status
    prompt: What is the status of order A1?
    checks:
      - tool_call: lookup_order
        args: {order_id: "A*"}
      - never_called: issue_refund
"""
BASE_PROMPT = "You are the refund desk of Example Co."


def run_head(tmp_path: Path, env: dict[str, str]) -> Report:
    suite = write_suite(tmp_path, refund_target(env, CHECKED_TURNS))
    with ScriptedServer(default_reply=refund_model) as server:
        return run_paths([suite], server, "record", env=upstream_env(server.base_url))


def checks_of(report: Report, eval_name: str, turn: int) -> dict[str, CheckResult]:
    result = next(e for e in report.suites[0].evals if e.name == eval_name)
    return {check.type: check for check in result.turns[turn - 1].checks}


def failed(report: Report) -> dict[tuple[str, int], list[CheckResult]]:
    return {(result.name, turn.turn): [c for c in turn.checks if not c.passed]
            for result in report.suites[0].evals for turn in result.turns
            if any(not c.passed for c in turn.checks)}


def test_the_checks_judge_the_apps_model_calls_when_the_app_reports_no_tool_calls(
        tmp_path: Path) -> None:
    report = run_head(tmp_path, {})
    assert [e.status for e in report.suites[0].evals] == [Status.PASS, Status.PASS], failed(report)
    refund = checks_of(report, "refund", 2)
    assert all(not turn.tool_calls for e in report.suites[0].evals for turn in e.turns)
    assert refund["tool_call"].detail == (
        'tool_call lookup_order: called lookup_order(order_id="A1") at model call 1, '
        'issue_refund(order_id="A1", amount=42.0) at model call 2 '
        "(from the app's model calls)")
    assert "sent in model call 1" in refund["system_prompt"].detail


@pytest.mark.parametrize(("head", "broken"), [
    ({"APP_TOOLS": "issue_refund"},
     {("refund", 2): {"tool_call": "called issue_refund(order_id=\"A1\", amount=42.0) at "
                                   "model call 1",
                      "tool_sequence": "issue_refund(order_id=\"A1\", amount=42.0) at "
                                       "model call 1"},
      ("refund", 3): {"tool_sequence": "tool_sequence (conversation)"},
      ("status", 1): {"tool_call": "no tool calls"}}),
    ({"APP_SYSTEM_PROMPT": BASE_PROMPT + " REFUND_FIRST"},
     {("refund", 2): {"tool_sequence": "called issue_refund(order_id=\"A1\", amount=42.0) "
                                       "at model call 1, lookup_order(order_id=\"A1\") at "
                                       "model call 2"},
      ("refund", 3): {"tool_sequence": "tool_sequence (conversation)"}}),
    ({"APP_SYSTEM_PROMPT": BASE_PROMPT + " LOOP"},
     {("refund", 2): {"no_loop": 'lookup_order(order_id="A1") 2 times in a row, model call '
                                 "1 to model call 2",
                      "max_tool_calls": 'lookup_order(order_id="A1") at model call 3',
                      "max_model_calls": "the app made 5: model call 1 (gpt-4o-mini, "
                                         "openai chat)"}}),
    ({"APP_SYSTEM_PROMPT": BASE_PROMPT + " REFUND_ALWAYS"},
     {("status", 1): {"never_called": 'called issue_refund(order_id="A1", amount=42.0) at '
                                      "model call 2"}}),
    ({"APP_SYSTEM_PROMPT": "You are a helpful assistant."},
     {("refund", 2): {"system_prompt": 'model call 1 sent "You are a helpful assistant."'}}),
])
def test_a_head_that_breaks_a_check_fails_it_on_that_turn_naming_the_call(
        tmp_path: Path, head: dict[str, str], broken: dict[tuple[str, int], dict[str, str]]
) -> None:
    report = run_head(tmp_path, head)
    found = failed(report)
    assert {place: {c.type for c in checks} for place, checks in found.items()} == {
        place: set(reasons) for place, reasons in broken.items()}
    for place, reasons in broken.items():
        details = {check.type: check.detail for check in found[place]}
        for kind, reason in reasons.items():
            assert reason in details[kind], details[kind]
