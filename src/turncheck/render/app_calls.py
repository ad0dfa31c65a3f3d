"""What the comment and the console say about an app target's own model calls: the
suite's tokens and cost are theirs, and how many there were per turn on each side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the run's console loads no comparison models
    from turncheck.report.comparison import AppCalls, SuiteComparison
    from turncheck.report.run import SuiteResult

APP_CALLS_NOTE = ("tokens and cost of app-target suites are the app's own model calls "
                  "(recorded through turncheck's proxy), plus the judge's")


def app_call_suites(suites: Sequence[SuiteComparison]) -> list[tuple[str, str]]:
    """(suite name, change) of every suite whose conversations were with an app, e.g.
    `app model calls: 3 → 6 (1 → 2 per turn)`."""
    return [(suite.name, app_calls_change(suite.app_calls)) for suite in suites
            if suite.app_calls is not None]


def app_calls_change(calls: AppCalls) -> str:
    return f"app model calls: {calls_change(calls)}"


def calls_change(calls: AppCalls) -> str:
    """Both sides' app model calls, e.g. `3 → 6 (1 → 2 per turn)`."""
    total = f"{_count(calls.base_calls)} → {_count(calls.head_calls)}"
    per_turn = f"{_per_turn(calls.base_per_turn)} → {_per_turn(calls.head_per_turn)}"
    return f"{total} ({per_turn} per turn)"


NOTHING_RECORDED = (
    "Warning: {name}: the app made no model call through turncheck's proxy in {turns}, so "
    "nothing of its model was recorded and a replay will not have it. If it calls a model, "
    "its client does not use the OPENAI_BASE_URL / ANTHROPIC_BASE_URL turncheck gives it: "
    "a client built before turncheck set them (in the process that starts the app) or a "
    "base URL written in the code (docs/targets.md, \"Replay stays on the machine\")")


def run_app_calls_lines(suites: Sequence[SuiteResult], mode: str = "replay") -> list[str]:
    """The run's console: each app-target suite's model calls, and what its spend is; in
    record mode, a warning for a suite whose app made none through the proxy."""
    counted = [(suite.name, found) for suite in suites if (found := suite.app_calls())]
    lines = [f"App model calls: {name}: {calls_in_turns(*found)}" for name, found in counted]
    if mode == "record":
        lines += [NOTHING_RECORDED.format(name=name, turns=counted_turns(turns))
                  for name, (calls, turns) in counted if calls == 0]
    return [*lines, f"Note: {APP_CALLS_NOTE}"] if lines else []


def counted_turns(turns: int) -> str:
    return f"{turns:,} turn" + ("" if turns == 1 else "s")


def calls_in_turns(calls: int, turns: int) -> str:
    """One side's app model calls, e.g. `8 in 5 turns (1.6 per turn)`."""
    per_turn = _per_turn(calls / turns if turns else None)
    return f"{calls:,} in {counted_turns(turns)} ({per_turn} per turn)"


def eval_app_calls(base: int | None, head: int | None) -> str | None:
    """An eval's app model calls on each side (every sample's), e.g. `app model calls 2 →
    1`; None when neither side talked to an app."""
    if base is None and head is None:
        return None
    if base is None or head is None or base == head:
        return f"app model calls {_count(head if head is not None else base)}"
    return f"app model calls {_count(base)} → {_count(head)}"


def _count(calls: int | None) -> str:
    return "–" if calls is None else f"{calls:,}"


def _per_turn(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio:.2f}".rstrip("0").rstrip(".")
