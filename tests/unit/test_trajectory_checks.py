"""Trajectory checks and the choice of whose tool calls a check judges
(engine/app_checks.py): the app's reply's when it reports any, else the model's in the
app's model calls; `source` chooses explicitly."""

from __future__ import annotations

from turncheck.engine.app_checks import (
    Observed,
    SeenCall,
    no_loop,
    tool_calls_seen,
    tool_sequence,
)
from turncheck.formats.suite import NoLoopCheck, ToolSequenceCheck
from turncheck.report.app_calls import AppCall, AppToolCall
from turncheck.report.results import ToolCallResult

REPORTED = [ToolCallResult(round=1, name="lookup_order", arguments={"id": 1}, by_app=True)]
APP_CALLS = [AppCall(provider="openai", api="chat", tool_calls=[
    AppToolCall(name="search", arguments={"q": "x"})])]


def test_the_reply_s_calls_are_judged_when_it_reports_any_else_the_app_s() -> None:
    both = Observed(REPORTED, APP_CALLS)
    assert [c.name for c in tool_calls_seen(both, None)[0]] == ["lookup_order"]
    calls, note = tool_calls_seen(Observed([], APP_CALLS), None)
    assert ([c.name for c in calls], note) == (["search"], " (from the app's model calls)")
    assert [c.name for c in tool_calls_seen(both, "app")[0]] == ["search"]
    assert tool_calls_seen(Observed([], APP_CALLS), "reply")[0] == []


def seen(*names: str) -> list[SeenCall]:
    return [SeenCall(name, {}, f"model call {n}") for n, name in enumerate(names, 1)]


def test_sequences_exact_in_order_and_any_order() -> None:
    def passes(order: str, *names: str) -> bool:
        check = ToolSequenceCheck(tool_sequence=["a", "b"], order=order)  # type: ignore[arg-type]
        return tool_sequence(check, seen(*names), "").passed

    assert [passes("exact", "a", "b"), passes("exact", "a", "x", "b"),
            passes("exact", "a", "b", "b")] == [True, False, False]
    assert [passes("in_order", "a", "x", "b"), passes("in_order", "b", "a")] == [True, False]
    assert [passes("any_order", "b", "x", "a"), passes("any_order", "a", "a")] == [True, False]


def test_a_loop_is_the_same_call_n_times_in_a_row_and_is_named() -> None:
    check = NoLoopCheck(no_loop=3)
    calls = [SeenCall("a", {"x": 1}, "model call 1"), SeenCall("a", {"x": 2}, "model call 2"),
             SeenCall("a", {"x": 2}, "model call 3"), SeenCall("b", {}, "model call 4"),
             SeenCall("a", {"x": 2}, "model call 5")]
    assert no_loop(check, calls, "").passed
    looped = [*calls[:3], SeenCall("a", {"x": 2}, "model call 4")]
    result = no_loop(check, looped, "")
    assert not result.passed
    assert result.detail == "no_loop 3: a(x=2) 3 times in a row, model call 2 to model call 4"
