"""The versioned JSON run report: what a run produced, per suite, eval and turn.

This is the contract between `turncheck run`, `turncheck compare`, the action
and the fork-safe `workflow_run` poster, so it only grows compatibly; bump
`SCHEMA_VERSION` on any breaking change.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import Field

from turncheck.diagnostics import Diagnostic
from turncheck.engine.calibration_report import CalibrationFileResult
from turncheck.engine.model import ReportModel

if TYPE_CHECKING:
    from turncheck.engine.protocol_report import ProtocolSuiteResult

SCHEMA_VERSION = 1


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    """Not finished, never a pass or a fail; `EvalResult.reason` says why (`budget`)."""


class StatusReason(StrEnum):
    """Why an eval (or case) has its status when the reason is not its own outcome."""

    INTERRUPTED = "interrupted"
    """The run was stopped (SIGINT/SIGTERM) before the eval finished; status `error`."""


class Usage(ReportModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


class CheckResult(ReportModel):
    type: str
    passed: bool
    detail: str
    depth: int = 0
    """Nesting inside `or` groups, for display."""
    error: str | None = None
    """Set when the check could not be evaluated (judge unparseable, embedding failed)."""


class TurnResult(ReportModel):
    turn: int
    prompt: str
    response: str
    usage: Usage
    cost_usd: float | None
    latency_ms: float
    checks: list[CheckResult] = Field(default_factory=list)
    passed: bool = False
    output_tokens_estimated: bool = False
    line: int | None = None
    """Line of this turn's `prompt` in the suite file."""
    judge_usage: Usage = Field(default_factory=Usage)
    """Judge and embedding calls made to check this turn (also summed on the eval)."""
    judge_cost_usd: float | None = 0.0


class SampleResult(ReportModel):
    """One sample of a repeated eval: an independent conversation."""

    index: int
    seed: int | None = None
    status: Status
    passed_on_turn: int | None
    error: str | None = None
    usage: Usage
    cost_usd: float | None
    judge_usage: Usage = Field(default_factory=Usage)
    judge_cost_usd: float | None = None
    turns: list[TurnResult] = Field(default_factory=list)


class RepeatSummary(ReportModel):
    """What an eval's samples add up to (docs/statistics.md)."""

    passes: int
    """k: samples that passed."""
    samples: int
    """n: samples taken."""
    pass_rate: float | None
    pass_rate_low: float
    """Wilson 95 % interval of the pass rate."""
    pass_rate_high: float
    pass_hat_n: bool
    """pass^n: every sample passed."""
    pass_at_n: bool
    """pass@n: at least one sample passed."""
    flaky: bool
    """0 < k < n."""
    turn_of_pass: dict[str, int] = Field(default_factory=dict)
    """Samples per turn they passed on; failed and errored samples under `fail`."""
    min_pass: int
    """Passing samples the eval needed to pass."""
    adaptive: bool = False
    """Sampled by `repeat: auto`."""
    max_repeat: int
    """Most samples the eval could have taken."""
    samples_saved: int = 0
    """max_repeat − samples: calls adaptive sampling did not make."""


class EvalResult(ReportModel):
    name: str
    prompt: str
    status: Status
    passed_on_turn: int | None
    error: str | None
    usage: Usage
    cost_usd: float | None
    judge_usage: Usage
    judge_cost_usd: float | None
    turns: list[TurnResult] = Field(default_factory=list)
    line: int = 1
    """Line of the eval's first `prompt` in the suite file, for annotations."""
    reason: str | None = None
    """Why the eval has its status when that is not its own outcome: `budget` (a
    `skipped` eval whose live call was not sent), `interrupted` (an `error`: the run was
    stopped before it finished); see `StatusReason`."""
    repeats: RepeatSummary | None = None
    """Set when the eval took more than one sample (or `repeat: auto`)."""
    samples: list[SampleResult] = Field(default_factory=list)
    """Every sample, when repeated; `turns` then shows the first sample's conversation."""


class SuiteResult(ReportModel):
    path: str
    name: str
    model: str
    provider: str
    cassette: str | None
    evals: list[EvalResult] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    judge_usage: Usage = Field(default_factory=Usage)
    judge_cost_usd: float | None = None


class Totals(ReportModel):
    evals: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    judge_usage: Usage = Field(default_factory=Usage)
    judge_cost_usd: float | None = None
    unpriced_models: list[str] = Field(default_factory=list)


class PriceSource(ReportModel):
    library: str
    version: str
    timestamp: str
    """ISO-8601 UTC instant all prices of this run (and its comparison) were taken at."""


class BudgetOutcome(ReportModel):
    """One hard budget of a run (docs/budgets.md) and what was spent against it."""

    scope: str
    """`run` (command line / action inputs) or the suite path (its `budget:` block)."""
    max_cost_usd: float | None = None
    max_live_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    refused_calls: int = 0
    """Live calls not sent because they could have crossed the budget."""

    @property
    def stopped(self) -> bool:
        return self.refused_calls > 0


class ShardInfo(ReportModel):
    index: int
    """1-based."""
    count: int
    plan: str
    """Digest of every eval of the full run and the shard count: shards of one plan merge."""


class Report(ReportModel):
    schema_version: int = SCHEMA_VERSION
    turncheck_version: str
    mode: str
    commit: str | None = None
    price_source: PriceSource
    suites: list[SuiteResult] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    started_at: str
    duration_s: float
    shard: ShardInfo | None = None
    live_tokens: int = 0
    """Tokens (model, judge, embeddings) this run sent to providers over the network."""
    calibrations: list[CalibrationFileResult] = Field(default_factory=list)
    """Sample files: how well each file's grader agrees with its labels."""
    protocols: list[ProtocolSuiteResult] = Field(default_factory=list)
    """Protocol suites (SPEC §9): per case, per turn scores and aggregates."""
    budgets: list[BudgetOutcome] = Field(default_factory=list)
    """Hard budgets of this run; empty when none was set."""

    @property
    def budget_stopped(self) -> bool:
        """Some live call was not sent because of a budget."""
        return any(budget.stopped for budget in self.budgets)


# Protocol results build on the models above; that module completes `Report` when it loads.
import turncheck.engine.protocol_report  # noqa: E402, F401
