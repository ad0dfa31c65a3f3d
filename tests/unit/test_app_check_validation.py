"""Checks on what the app did (docs/suites.md) are validated like every check: at line and
column, with did-you-mean, and with a clear error when the suite's conversations are with
a model, not an app."""

from __future__ import annotations

from turncheck.formats.suite import (
    MaxModelCallsCheck,
    NoLoopCheck,
    SystemPromptCheck,
    ToolCallCheck,
    ToolSequenceCheck,
)
from turncheck.formats.suite_loader import parse_suite

APP_METADATA = """\
metadata:
  name: bot
  target:
    start: python app.py {port}
    http: {path: /chat, body: {message: "{{ last_message }}"}, reply: reply}
"""
MODEL_METADATA = """\
metadata:
  name: bot
  model: gpt-4o-mini
  tools:
    - type: function
      function: {name: lookup_order, parameters: {type: object}}
"""
CHECKS = """\
evals:
  - prompt: Refund order A1.
    checks:
      - tool_call: lookup_order
        source: app
      - tool_sequence: [lookup_order, issue_refund]
        order: exact
        scope: conversation
      - no_loop: 3
      - max_model_calls: 2
      - system_prompt: {contains: refund desk}
"""


def test_an_app_suite_accepts_the_checks_on_what_the_app_did() -> None:
    loaded = parse_suite(APP_METADATA + CHECKS, "bot.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    checks = loaded.suite.evals[0].checks
    assert isinstance(checks, list)
    assert [type(check) for check in checks] == [
        ToolCallCheck, ToolSequenceCheck, NoLoopCheck, MaxModelCallsCheck, SystemPromptCheck]
    sequence = checks[1]
    assert isinstance(sequence, ToolSequenceCheck)
    assert (sequence.order, sequence.scope) == ("exact", "conversation")


def test_an_app_check_in_a_model_suite_is_an_error_at_its_key() -> None:
    text = MODEL_METADATA + """\
evals:
  - prompt: Refund order A1.
    checks:
      - tool_call: lookup_order
        source: app
      - max_model_calls: 2
"""
    loaded = parse_suite(text, "bot.eval.yaml")
    lines = text.splitlines()
    found = [(d.code, d.line, d.column) for d in loaded.diagnostics]
    source = next(i for i, line in enumerate(lines, 1) if "source: app" in line)
    calls = next(i for i, line in enumerate(lines, 1) if "max_model_calls" in line)
    assert found == [("app-check-without-app", source, 9), ("app-check-without-app", calls, 9)]
    assert "not an app" in loaded.diagnostics[1].message
    assert '"max_model_calls" checks the model calls an app target makes' in \
        loaded.diagnostics[1].message
    assert loaded.suite is None


def test_a_misspelt_check_suggests_the_check_meant() -> None:
    text = APP_METADATA + """\
evals:
  - prompt: Refund order A1.
    checks:
      - max_model_call: 2
"""
    [problem] = parse_suite(text, "bot.eval.yaml").diagnostics
    assert 'did you mean "max_model_calls"?' in problem.message
    assert (problem.line, problem.column) == (len(text.splitlines()), 9)


def test_bad_values_are_reported_at_the_value() -> None:
    text = APP_METADATA + """\
evals:
  - prompt: Refund order A1.
    checks:
      - no_loop: 1
      - tool_sequence: [lookup_order]
        order: sorted
"""
    loaded = parse_suite(text, "bot.eval.yaml")
    lines = text.splitlines()
    assert [d.line for d in loaded.diagnostics] == [len(lines) - 2, len(lines)]
    assert "greater than or equal to 2" in loaded.diagnostics[0].message
    assert "exact" in loaded.diagnostics[1].message
