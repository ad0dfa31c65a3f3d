"""The `budget:` block of suite metadata (docs/budgets.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt


class BudgetLimits(BaseModel):
    """Hard limits on live calls: a suite's `budget:` block, or `--max-cost-usd` /
    `--max-live-tokens` for a whole run. Replayed calls never count."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    max_cost_usd: StrictFloat | StrictInt | None = Field(
        default=None, ge=0, description="Most USD the live calls may cost."
    )
    max_live_tokens: StrictInt | None = Field(
        default=None, ge=0, description="Most tokens (input + output) the live calls may use."
    )

    def __bool__(self) -> bool:
        return self.max_cost_usd is not None or self.max_live_tokens is not None
