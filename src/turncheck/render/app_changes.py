"""What the app sent or did differently at head, as every view says it (the comment, the
HTML report, `compare`/`diff`'s console, the headline): a system prompt as a line diff,
the rest as short before → after lines, each once for all the evals it was seen in.

The texts are untrusted (an app's prompt, its tools' names): each view escapes them as it
escapes prompts; the diff is bounded by `prompt_changes`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from turncheck.compare.app_changes import CALLS, MODEL, SYSTEM_PROMPT, TOKENS, TOOL_CALLS, TOOLS
from turncheck.render.prompt_changes import Change, DiffBudget, text_change
from turncheck.report.comparison import AppChange, Comparison, SuiteComparison
from turncheck.text.counts import counted

NAMED_IN_LINE = 3
"""Evals named after a change; the rest are counted."""


@dataclass(frozen=True)
class AppChangeView:
    """One change as a view shows it."""

    line: str
    """`model calls per turn 1 → 2 · in refund, greet (2 evals, 4 turns)`."""
    prompt: Change | None = None
    """A system prompt's change, with its line diff."""


def change_text(change: AppChange) -> str:
    """What changed, in a few words: `model calls per turn 1 → 2`."""
    if change.what == SYSTEM_PROMPT:
        return "system prompt changed"
    if change.what == TOOLS:
        return f"tools offered: {change.summary}" if change.summary \
            else f"tools offered: [{change.before}] → [{change.after}]"
    if change.what == TOOL_CALLS:
        return f"tool calls: [{change.before}] → [{change.after}]"
    if change.what == TOKENS:
        return f"tokens per turn (mean) {change.before} → {change.after}"
    return f"{change.what} {change.before} → {change.after}"


def where_seen(change: AppChange) -> str:
    """`in refund, greet (2 evals, 4 turns)`; `in 50 evals (100 turns): a, b, c …`."""
    names = ", ".join(change.evals[:NAMED_IN_LINE])
    more = change.eval_count - min(len(change.evals), NAMED_IN_LINE)
    if more > 0:
        names += f" and {more} more"
    return f"in {names} ({counted(change.eval_count, 'eval')}, {counted(change.turns, 'turn')})"


def change_views(suite: SuiteComparison, diff_lines: int,
                 budget: DiffBudget | None = None) -> list[AppChangeView]:
    views = []
    for change in suite.app_changes:
        prompt = text_change("app system prompt", change.before, change.after, diff_lines,
                             budget) if change.what == SYSTEM_PROMPT else None
        views.append(AppChangeView(f"{change_text(change)} · {where_seen(change)}", prompt))
    return views


def changed_app_suites(comparison: Comparison) -> list[SuiteComparison]:
    return [suite for suite in comparison.suites if suite.app_changes]


def app_cost_changed(comparison: Comparison) -> bool:
    """The cost of a suite whose conversations are with an app changed."""
    return any(suite.app_calls is not None and suite.totals.delta.total_cost_usd
               for suite in comparison.suites)


def headline_changes(comparison: Comparison) -> list[str]:
    """The kinds of change, most telling first, once each: `model calls per turn 1 → 2`,
    `system prompt changed` (the tokens per turn only when nothing else changed)."""
    said: dict[str, str] = {}
    for suite in changed_app_suites(comparison):
        for change in suite.app_changes:
            said.setdefault(change.what, change_text(change))
    order = (CALLS, SYSTEM_PROMPT, TOOLS, MODEL, TOOL_CALLS)
    # Tokens follow from the rest, and the headline says the cost: named only alone.
    return [said[what] for what in order if what in said] or \
        [said[what] for what in (TOKENS,) if what in said]


def console_lines(comparison: Comparison) -> Iterator[str]:
    """`compare`/`diff`'s console: each app suite's changes, a system prompt's diff under
    its line."""
    for suite in changed_app_suites(comparison):
        yield f"what the app sent differently: {suite.name}"
        for view in change_views(suite, diff_lines=40):
            yield f"  {view.line}"
            if view.prompt is not None:
                yield from _diff_lines(view.prompt)


def _diff_lines(change: Change) -> Sequence[str]:
    if change.diff is None:
        return [f"    - {change.base or '(none)'}", f"    + {change.head or '(none)'}"]
    note = [f"    ({change.diff.note})"] if change.diff.note else []
    return [*(f"    {line}" for line in change.diff.lines), *note]
