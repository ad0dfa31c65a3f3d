"""The grader-calibration part of a comparison (`Comparison.calibration`): per sample
file, agreement and κ base → head and the samples whose verdict flipped.
`compare/calibration.py` computes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from turncheck.report.calibration import AgreementStats, GraderInfo, GraderVerdict
from turncheck.report.model import ReportModel
from turncheck.report.protocol_comparison import TurnScoreComparison
from turncheck.report.results import Status
from turncheck.report.rows import (
    AlwaysComparable,
    RowComparison,
    RowKind,
    SuiteState,
    Transition,
    WithoutTurns,
)
from turncheck.report.spend import Spend
from turncheck.stats.rates import wilson_interval

FileState = SuiteState
"""A sample file's state: new, changed, renamed or removed (as a suite's)."""


class CalibrationThresholds(ReportModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_agreement: float | None = Field(default=None, ge=0, le=100)
    """Fail when a file's head agreement is below this percentage (overrides the grader's
    own `min_agreement`)."""
    max_agreement_drop: float | None = Field(default=None, ge=0, le=100)
    """Fail when a file's agreement drops by more than this many percentage points."""
    min_kappa: float | None = Field(default=None, ge=-1, le=1)
    """Fail when a file's head quadratically weighted κ is below this."""


class CalibrationSide(ReportModel, WithoutTurns):
    grader: GraderInfo | None
    samples: int
    """Graded samples, the ones the grader could not score included (`errors`)."""
    agreed: int
    errors: int
    agreement_percent: float | None
    mean_distance: float | None
    cost_usd: float | None
    min_agreement: float | None = None
    agreement: AgreementStats | None = None
    """κ (plain, weighted, with 95 % intervals), within-one agreement, TPR/TNR."""
    status: Status | None = None
    """The file as a row (`CalibrationFileResult.row`): it fails below its minimum
    agreement, errors when the grader could not score a sample."""

    # The side as every kind's (`report.rows.ComparedSide`): a sample passes when the
    # grader's score agrees with its label.
    @property
    def passes(self) -> int:
        return self.agreed

    @property
    def errored(self) -> int:
        return self.errors

    @property
    def skipped(self) -> int:
        return 0

    @property
    def flaky(self) -> bool:
        return False

    @property
    def pass_rate_low(self) -> float:
        return wilson_interval(self.agreed, self.samples - self.errors)[0]

    @property
    def pass_rate_high(self) -> float:
        return wilson_interval(self.agreed, self.samples - self.errors)[1]

    @property
    def pass_hat_k(self) -> dict[str, float]:
        return {}

    @property
    def total_cost_usd(self) -> float | None:
        return self.cost_usd

    @property
    def spend(self) -> Spend:
        return Spend(cost_usd=self.cost_usd, total_cost_usd=self.cost_usd)

    @property
    def mean_score(self) -> float | None:
        return None


class FlippedSample(ReportModel):
    id: str
    line: int
    """The sample's line in the head file."""
    label: int
    base_score: int | None
    head_score: int | None
    base_verdict: GraderVerdict
    head_verdict: GraderVerdict
    head_reason: str | None
    head_error: str | None
    regression: bool
    """Agreed at base, not at head."""


class KappaComparison(ReportModel):
    """Weighted κ (the −3..3 scale) base → head, each with its bootstrap 95 % interval."""

    base: float | None
    base_low: float | None = None
    base_high: float | None = None
    head: float | None
    head_low: float | None = None
    head_high: float | None = None
    delta: float | None = None
    """head − base."""
    delta_low: float | None = None
    """Paired bootstrap 95 % interval of head − base over `paired_samples`."""
    delta_high: float | None = None
    paired_samples: int = 0
    """Samples scored at both sides (matched by id)."""
    lower: bool = False
    """Head's κ is credibly lower: the paired swap test's p ≤ 0.025."""


class CalibrationComparison(RowComparison[CalibrationSide], AlwaysComparable):
    """A sample file as a compared row: its status is the file's (`CalibrationSide.status`),
    its verdict the κ comparison's."""

    kind: ClassVar[RowKind] = RowKind.SAMPLE_FILE
    in_family: ClassVar[bool] = False
    path: str
    previous_path: str | None = None
    state: FileState
    note: str | None = None
    """Why the head file was not graded, when it was not."""
    agreement_delta: float | None
    """Head − base agreement in percentage points; None unless both sides were graded."""
    mean_distance_delta: float | None
    grader_changed: bool
    flipped: list[FlippedSample] = Field(default_factory=list)
    kappa: KappaComparison | None = None
    """Set when both sides were graded with κ."""

    @model_validator(mode="before")
    @classmethod
    def _transition_of_state(cls, data: Any) -> Any:
        """A comparison written before sample files were rows: new and removed files
        say so, the others read as unchanged."""
        if isinstance(data, dict) and "transition" not in data:
            state = data.get("state")
            known = state in (SuiteState.NEW.value, SuiteState.REMOVED.value)
            return {**data, "transition": state if known else Transition.UNCHANGED.value}
        return data

    @property
    def name(self) -> str:
        """The file's path: what names a row of any kind."""
        return self.path

    @property
    def scored_turns(self) -> Sequence[TurnScoreComparison]:
        return ()
