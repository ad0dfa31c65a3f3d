"""What the app sent (docs/targets.md): every model call an app target makes through the
recording proxy is part of the turn's report — model, system prompt, tools offered, the
tool calls the model asked for, the tool results the app sent back, tokens, cost — and a
replay with the upstream stopped gives the same record. The apps are real processes on
the official `openai` (Chat Completions and the Responses API) and `anthropic` SDKs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, run_paths, write_suite
from tests.support.refund_helpers import refund_model, refund_target
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import upstream_env
from turncheck.report.app_calls import AppCall
from turncheck.report.results import Status
from turncheck.report.run import Report


def calls_by_turn(report: Report) -> list[list[AppCall]]:
    [result] = report.suites[0].evals
    return [turn.app_calls for turn in result.turns]


def without_latency(turns: list[list[AppCall]]) -> list[list[AppCall]]:
    """Each call without what differs between runs of the same exchange (latency)."""
    return [[call.model_copy(update={"first_token_ms": None, "total_ms": None}) for call in calls]
            for calls in turns]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("stream", ["0", "1"])
def test_each_turn_holds_the_apps_model_calls_and_replay_gives_the_same(
        tmp_path: Path, api: str, stream: str) -> None:
    suite = write_suite(tmp_path, refund_target({"APP_API": api, "APP_STREAM": stream}))
    with ScriptedServer(default_reply=refund_model) as server:
        env = upstream_env(server.base_url)
        recorded = run_paths([suite], server, "record", env=env)
    replayed = run_paths([suite], None, "replay", env=env)

    [result] = recorded.suites[0].evals
    assert result.status == Status.PASS, result.error
    assert result.turns[1].tool_calls == []  # the app reports none of its tool calls
    greeting, refund = calls_by_turn(recorded)
    assert len(greeting) == 1 and len(refund) == 3
    provider, kind, model = ("anthropic", "messages", "claude-3-5-haiku-latest") \
        if api == "anthropic" else ("openai", api, "gpt-4o-mini")
    for call in (*greeting, *refund):
        assert (call.provider, call.api, call.model) == (provider, kind, model)
        assert call.streamed is (stream == "1")
        assert call.system == "You are the refund desk of Example Co."
        assert [tool.name for tool in call.tools] == ["lookup_order", "issue_refund"]
        assert call.input_tokens and call.output_tokens and call.cost_usd
        assert call.first_token_ms is not None and call.total_ms is not None
    assert [[(c.name, c.arguments) for c in call.tool_calls] for call in refund] == [
        [("lookup_order", {"order_id": "A1"})],
        [("issue_refund", {"order_id": "A1", "amount": 42.0})], []]
    assert [[r.name for r in call.tool_results] for call in refund] == [
        [], ["lookup_order"], ["issue_refund"]]
    assert json.loads(refund[1].tool_results[0].content)["status"] == "delivered"
    # The turn's usage and cost are its calls' sum.
    assert result.turns[1].usage.input_tokens == sum(c.input_tokens or 0 for c in refund)
    assert result.turns[1].cost_usd == pytest.approx(sum(c.cost_usd or 0 for c in refund))
    # Replayed with the upstream stopped: the same record, but no latency of today's.
    assert without_latency(calls_by_turn(replayed)) == without_latency(calls_by_turn(recorded))
    assert all(c.first_token_ms is None for turn in calls_by_turn(replayed) for c in turn)


def test_the_system_prompt_is_written_once_per_report_and_read_back(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, refund_target({}))
    with ScriptedServer(default_reply=refund_model) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
    text = report.model_dump_json()
    assert text.count("You are the refund desk of Example Co.") == 1
    assert calls_by_turn(Report.model_validate_json(text)) == calls_by_turn(report)


def test_a_secret_the_app_sends_is_redacted_in_the_record_as_everywhere(
        tmp_path: Path) -> None:
    # The app puts turncheck's own key in its system prompt and in a tool result.
    suite = write_suite(tmp_path, refund_target({
        "APP_SYSTEM_PROMPT": f"You are the refund desk. Key: {FAKE_KEY}"}))
    with ScriptedServer(default_reply=refund_model) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
    text = report.model_dump_json()
    assert FAKE_KEY not in text
    [first, *_] = calls_by_turn(report)[0]
    assert first.system is not None and "[REDACTED]" in first.system
