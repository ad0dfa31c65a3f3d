"""What a live run of some suites will cost, before it starts (`turncheck estimate
--json`): worst case and expected tokens and cost per suite and in total.
`engine/estimate.py` computes it."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.run import PriceSource
from turncheck.report.spend import Usage, UsageAndCost, add_costs

ExpectedSource = Literal["history", "guess"]
ESTIMATE_KIND: Final = "estimate"
ESTIMATE_SCHEMA_VERSION = 1


class Figures(UsageAndCost):
    """Tokens and cost of one side of an estimate (model, and judge plus embeddings)."""


    @property
    def tokens(self) -> int:
        return self.usage.total + self.judge_usage.total

    @property
    def total_cost_usd(self) -> float | None:
        return add_costs([self.cost_usd, self.judge_cost_usd])

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            usage=self.usage + other.usage,
            cost_usd=add_costs([self.cost_usd, other.cost_usd]),
            judge_usage=self.judge_usage + other.judge_usage,
            judge_cost_usd=add_costs([self.judge_cost_usd, other.judge_cost_usd]),
        )

    def times(self, count: int) -> Figures:
        def scaled(usage: Usage) -> Usage:
            return Usage(input_tokens=usage.input_tokens * count,
                         output_tokens=usage.output_tokens * count)

        return Figures(
            usage=scaled(self.usage),
            cost_usd=None if self.cost_usd is None else self.cost_usd * count,
            judge_usage=scaled(self.judge_usage),
            judge_cost_usd=None if self.judge_cost_usd is None else self.judge_cost_usd * count,
        )


class SuiteEstimate(ReportModel):
    kind: Literal["suite", "samples", "protocol"] = "suite"
    """An eval suite, a sample file whose grader scores each sample once, or a protocol
    suite (whose prompt sizes are approximated: they are rendered from earlier answers)."""
    path: str
    name: str
    model: str
    evals: int
    samples: int
    """Runs of each eval (`planned_samples`)."""
    worst: Figures
    expected: Figures
    expected_source: ExpectedSource
    evals_from_history: int = 0
    tokens_exact: bool
    """Input tokens counted with the model's own tokenizer; false: an estimate (bound)."""
    max_output_tokens: int
    max_output_tokens_default: bool
    """`max_output_tokens` is not set: the documented default was assumed."""


class Estimate(ReportModel):
    kind: Literal["estimate"] = ESTIMATE_KIND
    """Names the document, as every turncheck document does (docs/design.md)."""
    schema_version: int = ESTIMATE_SCHEMA_VERSION
    price_source: PriceSource
    suites: list[SuiteEstimate] = Field(default_factory=list)
    worst: Figures = Field(default_factory=Figures)
    expected: Figures = Field(default_factory=Figures)
    history: str | None = None
    not_estimated: list[str] = Field(default_factory=list)
    """Files whose calls this estimate does not cover."""
    unpriced_models: list[str] = Field(default_factory=list)
