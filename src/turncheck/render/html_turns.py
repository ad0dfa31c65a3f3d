"""Conversations in the HTML report: each turn with its prompt, response, checks and
spend; base and head turn by turn; what the two sides sent differently, as a diff."""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.render.html_views import ChangeView, CheckView, DiffLineView, TurnPair, TurnView
from turncheck.render.prompt_changes import (
    SUMMARY_DIFF_LINES,
    Change,
    DiffBudget,
    prompt_changed,
    text_change,
)
from turncheck.report.protocol import ProtocolTurn
from turncheck.report.results import CheckResult, TurnResult
from turncheck.report.spend import Usage
from turncheck.text.counts import counted
from turncheck.text.money import usd

MAX_TEXT_CHARS = 20_000
"""Longest prompt or response shown in full; longer ones are cut with a note."""


def cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS:,} more characters)"


def tokens_text(usage: Usage, judge: Usage | None = None) -> str:
    text = f"{usage.input_tokens:,} in · {usage.output_tokens:,} out"
    if judge is not None and judge.total:
        text += f" · judge {judge.total:,}"
    return text


def cost_text(cost: float | None, judge: float | None = None) -> str:
    if cost is None:
        return "unpriced"
    return usd(cost + (judge or 0.0))


def check_view(check: CheckResult) -> CheckView:
    # A detail that already names its type (`match "*x*"`, `min_tokens 5`) is not prefixed.
    named = check.detail.startswith(check.type)
    text = (check.detail if named else f"{check.type}: {check.detail}") \
        + (f" — {check.error}" if check.error else "")
    return CheckView(passed=None if check.error else check.passed, text=text, depth=check.depth)


def turn_view(turn: TurnResult) -> TurnView:
    checks = [check_view(c) for c in turn.checks]
    if isinstance(turn, ProtocolTurn):
        checks += [CheckView(passed=None,
                             text=f"{s.id} ({s.type}): "
                             + ("error" if s.score is None else f"{s.score:.2f}")
                             + f" × {s.weight:g} — {s.error or s.detail}")
                   for s in turn.scorers]
    return TurnView(
        number=turn.turn, prompt=cut(turn.prompt), response=cut(turn.response),
        checks=checks, passed=turn.passed if not isinstance(turn, ProtocolTurn) else None,
        tokens=tokens_text(turn.usage, turn.judge_usage),
        cost=cost_text(turn.cost_usd, turn.judge_cost_usd), latency=f"{turn.latency_ms:,.0f} ms",
        app_calls="" if turn.app_model_calls is None else
        counted(turn.app_model_calls, "app model call"),
        first_token="" if turn.first_token_ms is None else
        f"first token {turn.first_token_ms:,.0f} ms",
    )


def _gap(turns: Sequence[TurnResult]) -> str:
    if not turns:
        return "no conversation on this side"
    return f"not sent: the conversation ended after turn {len(turns)}"


_DIFF_KIND = {"+": "add", "-": "del", "@": "hunk"}


def change_view(change: Change) -> ChangeView:
    lines = [] if change.diff is None else \
        [DiffLineView(_DIFF_KIND.get(line[:1], "ctx"), line) for line in change.diff.lines]
    return ChangeView(title=f"{change.what[:1].upper()}{change.what[1:]} changed",
                      summary=change.summary, base=cut(change.base), head=cut(change.head),
                      lines=lines, note="" if change.diff is None else change.diff.note,
                      folded=bool(lines) or not change.inline)


def _pair(number: int, base: TurnResult | None, head: TurnResult | None,
          base_gap: str, head_gap: str, budget: DiffBudget | None) -> TurnPair:
    changed = prompt_changed(base, head)
    diff = None
    if changed and base is not None and head is not None:
        change = text_change(f"turn {number} prompt", base.prompt, head.prompt,
                             SUMMARY_DIFF_LINES, budget)
        diff = change_view(change) if change.diff is not None else None
    return TurnPair(number=number, base=turn_view(base) if base is not None else None,
                    head=turn_view(head) if head is not None else None, base_gap=base_gap,
                    head_gap=head_gap, prompt_changed=changed, prompt_diff=diff)


def pair_turns(base: Sequence[TurnResult], head: Sequence[TurnResult],
               budget: DiffBudget | None = None) -> list[TurnPair]:
    """Turn by turn: the base's n-th turn beside the head's n-th turn, each with its own
    prompt (a long changed prompt also as a diff, within the rendering's `budget`)."""
    return [_pair(i + 1, base[i] if i < len(base) else None,
                  head[i] if i < len(head) else None, _gap(base), _gap(head), budget)
            for i in range(max(len(base), len(head)))]
