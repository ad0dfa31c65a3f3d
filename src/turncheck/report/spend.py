"""Tokens and cost of one side of a comparison, and their head − base difference: one
arithmetic for evals, suites, protocol cases and protocol suites.

- "Cost" is model plus judge cost (`total_cost_usd`).
- A missing side counts as zero (a new row's delta is its head, a removed one's −base);
  otherwise a cost delta is None when either side is unpriced.
"""

from __future__ import annotations

from collections.abc import Iterable

from turncheck.report.model import ReportModel
from turncheck.report.results import Metered

__all__ = ["Metered", "Spend", "add_spend", "spend_delta", "spend_of", "spend_or_none"]


class Spend(ReportModel):
    """Tokens and cost of one side (or the head − base difference of two sides)."""

    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    judge_tokens: int = 0
    judge_cost_usd: float | None = 0.0
    total_cost_usd: float | None = 0.0
    """Model plus judge cost."""


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def spend_of(result: Metered) -> Spend:
    usage = result.usage
    return Spend(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, tokens=usage.total,
        cost_usd=result.cost_usd, judge_tokens=result.judge_usage.total,
        judge_cost_usd=result.judge_cost_usd,
        total_cost_usd=_add(result.cost_usd, result.judge_cost_usd),
    )


def spend_or_none(result: Metered | None) -> Spend | None:
    return None if result is None else spend_of(result)


def add_spend(parts: Iterable[Spend]) -> Spend:
    total = Spend()
    for part in parts:
        total = Spend(
            input_tokens=total.input_tokens + part.input_tokens,
            output_tokens=total.output_tokens + part.output_tokens,
            tokens=total.tokens + part.tokens,
            cost_usd=_add(total.cost_usd, part.cost_usd),
            judge_tokens=total.judge_tokens + part.judge_tokens,
            judge_cost_usd=_add(total.judge_cost_usd, part.judge_cost_usd),
            total_cost_usd=_add(total.total_cost_usd, part.total_cost_usd),
        )
    return total


def _cost_delta(base: float | None, head: float | None) -> float | None:
    return None if base is None or head is None else head - base


def spend_delta(base: Spend | None, head: Spend | None) -> Spend:
    """head − base; a missing side counts as zero (new: head, removed: −base)."""
    base = base if base is not None else Spend()
    head = head if head is not None else Spend()
    return Spend(
        input_tokens=head.input_tokens - base.input_tokens,
        output_tokens=head.output_tokens - base.output_tokens,
        tokens=head.tokens - base.tokens,
        cost_usd=_cost_delta(base.cost_usd, head.cost_usd),
        judge_tokens=head.judge_tokens - base.judge_tokens,
        judge_cost_usd=_cost_delta(base.judge_cost_usd, head.judge_cost_usd),
        total_cost_usd=_cost_delta(base.total_cost_usd, head.total_cost_usd),
    )
