"""Tokens and cost: what one result (a turn, a sample, an eval, a protocol case, a suite,
a run) spent on its model and its judge, one side of a comparison, and their head − base
difference: one value and one arithmetic for every kind.

- "Cost" is model plus judge cost (`total_cost_usd`), plus a simulated user's (its
  simulator's tokens and cost are also kept apart, `simulator_*`).
- A missing side counts as zero (a new row's delta is its head, a removed one's −base);
  otherwise a cost delta is None when either side is unpriced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import Field

from turncheck.report.model import ReportModel


class Usage(ReportModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not other.total:  # one instance, not a copy per sum (usages are never changed)
            return self
        if not self.total:
            return other
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


NO_USAGE = Usage()
"""Zero tokens: one instance for every result that spent none (a turn without a judge or a
simulated user), as usages are never changed in place."""


def _no_usage() -> Usage:
    return NO_USAGE


def add_costs(costs: list[float | None]) -> float | None:
    """Sum of costs; None (unpriced) if any part is unpriced and there are parts."""
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


class Spend(ReportModel):
    """Tokens and cost of one side (or the head − base difference of two sides)."""

    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    judge_tokens: int = 0
    judge_cost_usd: float | None = 0.0
    total_cost_usd: float | None = 0.0
    """Model plus judge cost (plus the simulator's)."""
    # Left out when zero, so a comparison without simulated users reads as before.
    simulator_tokens: int = Field(default=0, exclude_if=lambda value: value == 0)
    """A simulated user's model: its tokens, apart from the app's (docs/suites.md)."""
    simulator_cost_usd: float | None = Field(default=0.0, exclude_if=lambda value: value == 0)


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


class UsageAndCost(ReportModel):
    """What a result spent, as the run report has always written it: model and judge
    usage and cost side by side (a cost is None when unpriced). Declared once for every
    kind; `spend` is the same as one value."""

    usage: Usage = Field(default_factory=_no_usage)
    cost_usd: float | None = 0.0
    judge_usage: Usage = Field(default_factory=_no_usage)
    judge_cost_usd: float | None = 0.0
    """Judge and embedding calls made to check or score it."""
    simulator_usage: Usage = Field(default_factory=_no_usage, exclude_if=lambda u: u.total == 0)
    """A simulated user's model calls (docs/suites.md): counted apart from the model's or
    app's `usage`, left out of reports without one."""
    simulator_cost_usd: float | None = Field(default=0.0, exclude_if=lambda value: value == 0)

    @property
    def spend(self) -> Spend:
        usage = self.usage
        return Spend(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            tokens=usage.total, cost_usd=self.cost_usd, judge_tokens=self.judge_usage.total,
            judge_cost_usd=self.judge_cost_usd,
            total_cost_usd=_add(_add(self.cost_usd, self.judge_cost_usd),
                                self.simulator_cost_usd),
            simulator_tokens=self.simulator_usage.total,
            simulator_cost_usd=self.simulator_cost_usd,
        )


def spend_or_none(result: UsageAndCost | None) -> Spend | None:
    return None if result is None else result.spend


def spend_totals(parts: Sequence[UsageAndCost]) -> dict[str, Usage | float | None]:
    """The `usage`, `cost_usd`, `judge_usage` and `judge_cost_usd` fields summed over
    `parts` (turns, samples, cases or suites); a cost is None when any part's is."""
    return {
        "usage": sum((p.usage for p in parts), Usage()),
        "cost_usd": add_costs([p.cost_usd for p in parts]),
        "judge_usage": sum((p.judge_usage for p in parts), Usage()),
        "judge_cost_usd": add_costs([p.judge_cost_usd for p in parts]),
        "simulator_usage": sum((p.simulator_usage for p in parts), Usage()),
        "simulator_cost_usd": add_costs([p.simulator_cost_usd for p in parts]),
    }


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
            simulator_tokens=total.simulator_tokens + part.simulator_tokens,
            simulator_cost_usd=_add(total.simulator_cost_usd, part.simulator_cost_usd),
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
        simulator_tokens=head.simulator_tokens - base.simulator_tokens,
        simulator_cost_usd=_cost_delta(base.simulator_cost_usd, head.simulator_cost_usd),
    )
