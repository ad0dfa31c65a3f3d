"""The protocol-suite part of a comparison (`Comparison.protocols`): per case, per turn
score changes, aggregates, spend and verdicts. `compare/protocol.py` computes it."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.results import Status
from turncheck.report.rows import (
    AlwaysComparable,
    RowComparison,
    RowCounts,
    RowKind,
    SampleSide,
    SuiteState,
    WithoutTurns,
)
from turncheck.report.spend import Spend


class ScoreChange(ReportModel):
    base: float | None = None
    head: float | None = None
    delta: float | None = None


class ScorerChange(ScoreChange):
    """One scorer of a turn (or, for a suite, its mean over the cases), base → head:
    scores in 0..1; a judge scale's ratings on its own scale too."""

    id: str
    name: str
    """The suite's label for it, else its id."""
    type: str
    turn: str = ""
    """The turn's id (suite-level rows)."""
    scale: list[int] | None = None
    base_rating: float | None = None
    head_rating: float | None = None


class TurnScoreComparison(ScoreChange):
    id: str
    base_variant: str | None = None
    head_variant: str | None = None
    tokens: int | None = None
    """Head tokens of this turn (model and judge)."""
    cost_usd: float | None = None
    """Head cost of this turn (model and judge)."""
    scorers: list[ScorerChange] = Field(default_factory=list)


class CaseSide(SampleSide, WithoutTurns):
    """One protocol case's result on one side."""

    status: Status | None = None
    mean_score: float | None = None
    """Mean of the samples' weighted scores (a sample without a score counts as 0)."""
    scores: list[float] = Field(default_factory=list)
    """Each sample's weighted score, as the verdict's test sees it."""
    first_look: int | None = None
    """`repeat: auto`: the samples of the first look. Each side stopped on its own
    samples, so only these are tested (docs/statistics.md, "repeat: auto")."""


class CaseComparison(RowComparison[CaseSide], AlwaysComparable):
    kind: ClassVar[RowKind] = RowKind.CASE
    id: str
    turns: list[TurnScoreComparison] = Field(default_factory=list)
    aggregates: dict[str, ScoreChange] = Field(default_factory=dict)
    score_change: float | None = None
    """Head − base mean weighted score."""

    @property
    def name(self) -> str:
        """The case's id: what names a row of any kind."""
        return self.id

    @property
    def scored_turns(self) -> list[TurnScoreComparison]:
        return self.turns


class ProtocolCounts(RowCounts):
    cases: int = 0
    """Head cases (removed ones are not counted here)."""


class ProtocolSuiteComparison(ReportModel):
    path: str
    previous_path: str | None = None
    state: SuiteState
    name: str
    model: str
    pass_threshold: float | None = None
    turn_ids: list[str] = Field(default_factory=list)
    cases: list[CaseComparison] = Field(default_factory=list)
    aggregates: dict[str, ScoreChange] = Field(default_factory=dict)
    """The aggregates the suite declares, in order (`labels` names them)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Each declared aggregate's label (the suite's own, else the default)."""
    scorers: list[ScorerChange] = Field(default_factory=list)
    """Every scorer the suite declares: its mean over the cases, base → head."""
    meta_cognition_note: str | None = None
    base: Spend | None = None
    head: Spend | None = None
    delta: Spend = Field(default_factory=Spend)
    counts: ProtocolCounts = Field(default_factory=ProtocolCounts)


class ProtocolComparison(ReportModel):
    suites: list[ProtocolSuiteComparison] = Field(default_factory=list)
    counts: ProtocolCounts = Field(default_factory=ProtocolCounts)
    base: Spend | None = None
    head: Spend | None = None
    delta: Spend = Field(default_factory=Spend)
