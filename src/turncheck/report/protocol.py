"""Results of protocol suites, as they appear in the JSON report (`protocols[]`).

Scores are in 0..1. A scorer that could not be evaluated has `score: null` and
an `error`; it makes its case an error (never a pass).
"""

from __future__ import annotations

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.results import (
    CheckResult,
    RepeatSummary,
    Sample,
    Spent,
    Status,
    StatusReason,
    SuiteHeader,
    TurnResult,
)
from turncheck.report.rows import Row, RowKind, samples_of


class NameMatch(ReportModel):
    predicted: str
    expected: str
    similarity: float


class ListF1Detail(ReportModel):
    precision: float
    recall: float
    f1: float
    matched: list[NameMatch] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    """Expected names the response does not have."""
    hallucinated: list[str] = Field(default_factory=list)
    """Names in the response that match no expected name."""
    extracted: list[str] = Field(default_factory=list)
    """Every name extracted from the response, in order."""
    expected: list[str] = Field(default_factory=list)


class PairResult(ReportModel):
    before: str
    after: str
    status: str
    """`ok`, `reversed` or `missing` (a name is not in the response)."""


class OrderDetail(ReportModel):
    pairs: list[PairResult] = Field(default_factory=list)
    satisfied: int = 0
    counted: int = 0
    """Pairs the score is over (`missing: skip` leaves out pairs with a missing name)."""


class JudgeScaleDetail(ReportModel):
    rating: int
    """1..5 as the judge answered; the score is (rating − 1) / 4."""
    reason: str
    prompt_version: str


class SelfAssessmentDetail(ReportModel):
    estimate: float | None
    """The model's own estimate in 0..1, None when none was found."""
    actual: float
    quote: str | None = None
    """The text the estimate was read from."""


class ScorerResult(ReportModel):
    id: str
    type: str
    weight: float
    score: float | None
    """0..1; None when the scorer could not be evaluated (see `error`)."""
    detail: str
    error: str | None = None
    check: CheckResult | None = None
    list_f1: ListF1Detail | None = None
    order: OrderDetail | None = None
    judge_scale: JudgeScaleDetail | None = None
    self_assessment: SelfAssessmentDetail | None = None


class ProtocolTurn(TurnResult):
    """One scripted turn of a case; `turn` is its 1-based position, `id` its name."""

    id: str
    variant: str | None = None
    """The variant that was chosen, when the turn has variants."""
    score: float | None = None
    """Weighted mean of this turn's scorers (None without scorers or on an error)."""
    weight: float = 0.0
    """Sum of this turn's scorer weights."""
    scorers: list[ScorerResult] = Field(default_factory=list)
    items: list[str] = Field(default_factory=list)
    """Names extracted from the response (lists, hierarchies, JSON)."""
    extracted: dict[str, str | None] = Field(default_factory=dict)


class CaseAggregates(ReportModel):
    interactive_reasoning: float | None = None
    """Σ weight × score / Σ weight over every scorer of every turn."""
    final_f1: float | None = None
    self_correction: float | None = None
    """after − before (see the suite's `aggregates.self_correction`)."""
    self_assessment_estimate: float | None = None
    self_assessment_actual: float | None = None


class CaseSample(Sample):
    """One sample of a repeated protocol case."""

    score: float | None
    """The sample's weighted score (its interactive reasoning); None when it has none."""
    reason: StatusReason | None = None
    aggregates: CaseAggregates = Field(default_factory=CaseAggregates)
    turns: list[ProtocolTurn] = Field(default_factory=list)


class CaseResult(Spent):
    id: str
    status: Status
    """`pass`/`fail` against `pass_threshold` (every complete case passes without one);
    for a repeated case, by the samples' `min_pass` rule (docs/statistics.md)."""
    error: str | None = None
    turns: list[ProtocolTurn] = Field(default_factory=list)
    aggregates: CaseAggregates = Field(default_factory=CaseAggregates)
    line: int = 1
    """Line of the case in the suite file (or in its cases file)."""
    reason: StatusReason | None = None
    repeats: RepeatSummary | None = None
    """Set when the case took more than one sample (or `repeat: auto`); its
    `aggregates` are then means over the samples, its `turns` the first sample's."""
    samples: list[CaseSample] = Field(default_factory=list)
    """Every sample, when repeated: the case's score distribution."""

    def row(self, file: str) -> Row:
        passes, samples = samples_of(self.status, self.repeats)
        return Row(RowKind.CASE, self.id, file, self.line, self.status, passes, samples,
                   self.spend)

    @property
    def scores(self) -> list[float | None]:
        """Each sample's weighted score (the one score of an unrepeated case)."""
        if not self.samples:
            return [self.aggregates.interactive_reasoning]
        return [s.score for s in self.samples]


class TurnSummary(ReportModel):
    id: str
    weight: float
    mean_score: float | None = None
    """Mean over cases that reached this turn with a score."""
    variants: dict[str, int] = Field(default_factory=dict)
    """How many cases got each variant."""


class ProtocolAggregates(ReportModel):
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    interactive_reasoning: float | None = None
    final_f1: float | None = None
    self_correction: float | None = None
    meta_cognition: float | None = None
    """Pearson correlation over cases of self-assessed estimate and measured score."""
    meta_cognition_cases: int = 0
    meta_cognition_note: str | None = None
    """Why the correlation is undefined, when it is."""


class ProtocolSuiteResult(SuiteHeader, Spent):
    cases_file: str | None = None
    pass_threshold: float | None = None
    turns: list[TurnSummary] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)
    aggregates: ProtocolAggregates = Field(default_factory=ProtocolAggregates)

    def rows(self) -> list[Row]:
        return [case.row(self.path) for case in self.cases]
