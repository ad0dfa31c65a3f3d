"""The grader-calibration part of a comparison (`Comparison.calibration`): per sample
file, agreement and κ base → head and the samples whose verdict flipped.
`compare/calibration.py` computes it."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from turncheck.report.calibration import AgreementStats, GraderInfo, GraderVerdict
from turncheck.report.model import ReportModel
from turncheck.report.rows import SuiteState

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


class CalibrationSide(ReportModel):
    grader: GraderInfo | None
    samples: int
    agreed: int
    errors: int
    agreement_percent: float | None
    mean_distance: float | None
    cost_usd: float | None
    min_agreement: float | None = None
    agreement: AgreementStats | None = None
    """κ (plain, weighted, with 95 % intervals), within-one agreement, TPR/TNR."""


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


class CalibrationComparison(ReportModel):
    path: str
    previous_path: str | None = None
    state: FileState
    note: str | None = None
    """Why the head file was not graded, when it was not."""
    base: CalibrationSide | None
    head: CalibrationSide | None
    agreement_delta: float | None
    """Head − base agreement in percentage points; None unless both sides were graded."""
    mean_distance_delta: float | None
    grader_changed: bool
    flipped: list[FlippedSample] = Field(default_factory=list)
    kappa: KappaComparison | None = None
    """Set when both sides were graded with κ."""
