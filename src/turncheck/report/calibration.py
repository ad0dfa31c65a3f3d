"""Grader calibration in the run report: per sample file, how well the grader agrees
with the labels (the report's `calibrations` section).

A sample's *distance* is |grader score − label|. *Agreement* is the share of the
file's valid samples the grader scored exactly as labelled; a sample the grader
could not score (an error row) counts against agreement and has no distance.
The *mean distance* is taken over the scored samples only.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.results import Status
from turncheck.report.rows import Row, RowKind
from turncheck.report.spend import Usage, UsageAndCost

FAR_DISTANCE = 3


class Badge(StrEnum):
    AGREE = "agree"
    """Distance 0."""
    OFF = "off"
    """Distance 1 or 2."""
    FAR = "far"
    """Distance 3 or more."""
    ERROR = "error"
    """The grader could not score the sample."""


class GraderVerdict(StrEnum):
    """What a sample's result says about the grader: the thing that can flip."""

    AGREE = "agree"
    DISAGREE = "disagree"
    ERROR = "error"


def percent_text(value: float | None) -> str:
    """An agreement for people: `100%`, `60%`, `66.7%`; `—` when there is none."""
    if value is None:
        return "—"
    rounded = round(value, 1)
    return f"{int(rounded)}%" if rounded == int(rounded) else f"{rounded}%"


def is_below(value: float, minimum: float) -> bool:
    # Tolerance, so that 3 of 5 agreeing is never "below 60%" through float rounding.
    return value < minimum - 1e-9


def badge_for(distance: int | None) -> Badge:
    if distance is None:
        return Badge.ERROR
    if distance == 0:
        return Badge.AGREE
    return Badge.FAR if distance >= FAR_DISTANCE else Badge.OFF


class GraderInfo(ReportModel):
    model: str
    provider: str
    kind: Literal["criteria", "prompt"]
    prompt_version: str | None
    """`turncheck-grader/1` for `criteria` graders; None for a file's own prompt."""
    instructions: str
    """The criteria, or the prompt template."""
    line: int


class SampleGrade(ReportModel):
    id: str
    line: int
    label: int
    label_reason: str | None = None
    score: int | None
    """The grader's score; None on an error row."""
    distance: int | None
    badge: Badge
    reason: str | None = None
    """The grader's reason."""
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    latency_ms: float = 0.0

    @property
    def spent(self) -> UsageAndCost:
        """The grader's call for this sample (the grader is the model here)."""
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return UsageAndCost(usage=usage, cost_usd=self.cost_usd)

    @property
    def verdict(self) -> GraderVerdict:
        if self.badge is Badge.ERROR:
            return GraderVerdict.ERROR
        return GraderVerdict.AGREE if self.badge is Badge.AGREE else GraderVerdict.DISAGREE


class ConfusionMatrix(ReportModel):
    """Grader pass/fail (score ≥ threshold) against the labels' pass/fail."""

    threshold: int
    true_positive: int
    false_negative: int
    false_positive: int
    true_negative: int
    tpr: float | None
    """Labelled passes the grader passed."""
    tnr: float | None
    """Labelled failures the grader failed."""


class AgreementStats(ReportModel):
    """Cohen's κ and friends over the scored samples (error rows left out)."""

    scored: int
    kappa: float | None
    kappa_low: float | None = None
    kappa_high: float | None = None
    weighted_kappa: float | None
    """Quadratically weighted κ on the −3..3 scale."""
    weighted_kappa_low: float | None = None
    """Percentile bootstrap 95 % interval of the weighted κ."""
    weighted_kappa_high: float | None = None
    within_one_percent: float | None
    """Samples scored at most one point from their label, in percent."""
    confusion: ConfusionMatrix | None = None
    """Set when the grader defines `pass_threshold`."""


class CalibrationFileResult(ReportModel):
    path: str
    grader: GraderInfo | None
    note: str | None = None
    """Why the file was not graded (no grader, invalid grader, no valid sample)."""
    cassette: str | None = None
    min_agreement: float | None = None
    """The grader's `min_agreement` (percent), if it sets one."""
    valid_samples: int = 0
    skipped_samples: int = 0
    """Invalid samples: reported in the report's diagnostics, not graded."""
    samples: list[SampleGrade] = Field(default_factory=list)
    agreed: int = 0
    errors: int = 0
    agreement_percent: float | None = None
    """Exact agreements in percent of the graded samples; None when nothing was graded."""
    mean_distance: float | None = None
    """Over the scored samples; None when none was scored."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    agreement: AgreementStats | None = None
    """Chance-corrected agreement over the scored samples (docs/statistics.md)."""

    @property
    def graded(self) -> bool:
        return self.grader is not None and bool(self.samples)

    @property
    def spent(self) -> UsageAndCost:
        """The grader's calls as every kind's spend (the grader is the model here)."""
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return UsageAndCost(usage=usage, cost_usd=self.cost_usd)

    def row(self) -> Row:
        """The file as one row: it fails below its minimum agreement, errors when the
        grader could not score a sample."""
        below = self.min_agreement is not None and self.agreement_percent is not None \
            and is_below(self.agreement_percent, self.min_agreement)
        status = Status.ERROR if self.errors else Status.FAIL if below else Status.PASS
        return Row(RowKind.SAMPLE_FILE, self.path, self.path, None, status, self.agreed,
                   len(self.samples) - self.errors, self.spent.spend)
