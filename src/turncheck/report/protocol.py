"""Results of protocol suites, as they appear in the JSON report (`protocols[]`).

Scores are in 0..1. A scorer that could not be evaluated has `score: null` and
an `error`; it makes its case an error (never a pass).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.results import (
    CheckResult,
    RepeatSummary,
    Sample,
    Status,
    StatusReason,
    SuiteHeader,
    TurnResult,
)
from turncheck.report.rows import Row, RowKind, samples_of
from turncheck.report.spend import UsageAndCost


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


DEFAULT_SCALE = [1, 5]


class JudgeScaleDetail(ReportModel):
    rating: int
    """On the scorer's scale, as the judge answered; the score is
    (rating − lowest) / (highest − lowest)."""
    reason: str
    prompt_version: str
    scale: list[int] = Field(default_factory=lambda: list(DEFAULT_SCALE))
    """[lowest, highest] rating of the scorer (`judge_scale.scale`)."""


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


class CaseResult(UsageAndCost):
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


class ScorerSummary(ReportModel):
    """One scorer the suite declares, over every case that reached its turn."""

    id: str
    type: str
    weight: float
    label: str | None = None
    """The suite's name for it (`label:`); None: its id."""
    mean_score: float | None = None
    """Mean score (0..1) over the results that have one."""
    scale: list[int] | None = None
    """A judge scale's [lowest, highest] rating."""
    mean_rating: float | None = None
    """A judge scale's mean rating, on its scale."""

    @property
    def name(self) -> str:
        return self.label or self.id


class TurnSummary(ReportModel):
    id: str
    weight: float
    mean_score: float | None = None
    """Mean over cases that reached this turn with a score."""
    variants: dict[str, int] = Field(default_factory=dict)
    """How many cases got each variant."""
    scorers: list[ScorerSummary] = Field(default_factory=list)


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


LEGACY_LABELS = {
    "interactive_reasoning": "Interactive reasoning (weighted)",
    "final_f1": "Final F1",
    "self_correction": "Self-correction",
    "meta_cognition": "Meta-cognition (r)",
}
"""What a report of a turncheck before declared aggregates (no `aggregate_labels`) shows:
the weighted score, and the others where they have a value."""


class ProtocolSuiteResult(SuiteHeader, UsageAndCost):
    cases_file: str | None = None
    pass_threshold: float | None = None
    turns: list[TurnSummary] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)
    aggregates: ProtocolAggregates = Field(default_factory=ProtocolAggregates)
    aggregate_labels: dict[str, str] | None = Field(default=None,
                                                    exclude_if=lambda value: value is None)
    """The aggregates the suite declares (`aggregates` field names, in order) with its
    labels; the views show these only. None in reports of an older turncheck."""
    system_prompt: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The system prompt as sent (vars rendered, secrets as their tokens, redacted)."""
    tools: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The tool definitions the turns offer, as sent to the API."""

    def rows(self) -> list[Row]:
        return [case.row(self.path) for case in self.cases]

    def labels(self) -> dict[str, str]:
        """The aggregates to show, with their labels (see `aggregate_labels`)."""
        if self.aggregate_labels is not None:
            return self.aggregate_labels
        values = self.aggregates.model_dump()
        return {name: label for name, label in LEGACY_LABELS.items()
                if name == "interactive_reasoning" or values.get(name) is not None}

    def scorer_label(self, turn_id: str, scorer_id: str) -> str:
        summary = next((t for t in self.turns if t.id == turn_id), None)
        found = next((s for s in summary.scorers if s.id == scorer_id), None) \
            if summary is not None else None
        return found.name if found is not None else scorer_id
