"""The comparison of a head run report with its base (`turncheck compare --json`, the
action's comment source): per suite and eval the transition, samples, spend and verdict;
totals, the cost alert and the protocol and calibration parts. `compare/` computes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Literal, Protocol

from pydantic import ConfigDict, Field

from turncheck.diagnostics import Diagnostic
from turncheck.report.calibration_comparison import CalibrationComparison
from turncheck.report.model import ReportModel
from turncheck.report.protocol_comparison import ProtocolComparison, TurnScoreComparison
from turncheck.report.results import Status
from turncheck.report.rows import (
    ComparedSide,
    Row,
    RowComparison,
    RowCounts,
    RowKind,
    SampleSide,
    SuiteState,
    Transition,
)
from turncheck.report.run import PriceSource
from turncheck.report.spend import Spend
from turncheck.stats.verdicts import Verdict

COMPARISON_KIND: Final = "comparison"
COMPARISON_SCHEMA_VERSION = 1

MatchKey = Literal["name", "prompt"]


class CostThresholds(ReportModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    percent: float | None = Field(default=None, ge=0)
    """Alert when the cost grows by more than this percentage of the base cost."""
    usd: float | None = Field(default=None, ge=0)
    """Alert when the cost grows by more than this many US dollars."""
    latency_percent: float | None = Field(default=None, ge=0,
                                          exclude_if=lambda value: value is None)
    """`fail-on: latency`: an app suite whose turns are slower at head than base's by
    more than this percentage, by the noise-aware test of `stats/latency.py`."""


class EvalSide(SampleSide):
    """One eval's result on one side."""

    status: Status
    passed_on_turn: int | None
    turns: int
    failed_on_turn: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """Scripted turns: the turn whose checks failed first (a failed eval)."""
    error: str | None
    line: int
    turn_of_pass: dict[str, int] = Field(default_factory=dict)
    """Samples per turn they passed on; the others under `fail`."""
    looks: list[dict[str, int]] = Field(default_factory=list)
    """`repeat: auto`: `turn_of_pass` of each look (empty for a fixed number of samples)."""
    paired: str | None = None
    """The pairing token of a `repeat: auto` eval stopped together with the other side."""
    max_repeat: int | None = None
    """`repeat: auto`: the most samples the eval could have taken."""
    app_model_calls: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """An app target's eval: the model calls the app made (every sample's turns)."""
    app_prompts: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    """An app target's eval: the SHA-256 of each system prompt its model calls sent."""
    app_tools: dict[str, str] = Field(default_factory=dict, exclude_if=lambda value: not value)
    """An app target's eval: the tools its model calls offered, name → schema SHA-256."""

    @property
    def mean_score(self) -> float | None:
        """Evals pass or fail; they have no score (a protocol case's side has one)."""
        return None


class EvalComparison(RowComparison[EvalSide]):
    kind: ClassVar[RowKind] = RowKind.EVAL
    suite_path: str
    name: str
    prompt: str
    matched_by: MatchKey | None
    previous_name: str | None = None
    """Base name when matched by prompt under a different name."""
    turns_delta: int | None
    pass_rate_change: float | None = None
    """Head pass rate − base pass rate."""
    turn_shift: float | None = None
    """Mean turn-of-pass of head − base over passing samples."""
    not_like_for_like: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Why base and head are not comparable (a simulated user's setup changed), e.g.
    `the simulator's persona changed`; None: they are."""

    @property
    def scored_turns(self) -> Sequence[TurnScoreComparison]:
        """An eval's turns pass or fail on checks: none is scored."""
        return ()


class ComparedRow(Protocol):
    """What every compared row answers, whatever its kind (an eval, a protocol case): the
    views read rows through this and keep per kind only their own columns."""

    @property
    def kind(self) -> RowKind: ...
    @property
    def in_family(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def line(self) -> int | None: ...
    @property
    def transition(self) -> Transition: ...
    @property
    def label(self) -> str: ...
    @property
    def base_status(self) -> Status | None: ...
    @property
    def head_status(self) -> Status | None: ...
    @property
    def base(self) -> ComparedSide | None: ...
    @property
    def head(self) -> ComparedSide | None: ...
    @property
    def delta(self) -> Spend: ...
    @property
    def error(self) -> str | None: ...
    @property
    def not_like_for_like(self) -> str | None: ...
    @property
    def scored_turns(self) -> Sequence[TurnScoreComparison]: ...
    @property
    def regression(self) -> bool: ...
    # The statistical verdict (`VerdictRow`):
    @property
    def verdict(self) -> Verdict: ...
    @property
    def verdict_cause(self) -> str | None: ...
    @property
    def verdict_reason(self) -> str: ...
    @property
    def p_value(self) -> float | None: ...
    @property
    def p_raw(self) -> float | None: ...
    @property
    def flaky(self) -> bool: ...


@dataclass(frozen=True)
class Located:
    """A compared row of any kind with where it is: its file and its group's name (a
    suite's; a sample file's path) at head, and its file and name at base (a renamed
    suite's old path, an eval matched under its old name)."""

    row: ComparedRow
    file: str
    group: str
    base_file: str
    base_name: str

    @property
    def listed(self) -> Row:
        """The row as every view lists a row, with its verdict: its head's status and
        samples, a removed row's base's (a sample file graded on neither side: none)."""
        side = self.row.head if self.row.head is not None else self.row.base
        status = self.row.head_status or self.row.base_status or Status.SKIPPED
        passes, samples = (0, 0) if side is None else (side.passes, side.samples)
        return Row(self.row.kind, self.row.name, self.file, self.row.line, status, passes,
                   samples, Spend() if side is None else side.spend, self.row.verdict)


class Counts(RowCounts):
    evals: int = 0
    """Head evals (removed ones are not counted here)."""
    turn_changed: int = 0


class Summary(ReportModel):
    base: Spend | None
    head: Spend | None
    delta: Spend
    counts: Counts


class AppCalls(ReportModel):
    """An app-target suite's own model calls (through the recording proxy), per side: how
    many, over how many turns. Its tokens and cost are these calls' (and the judge's)."""

    base_calls: int | None = None
    base_turns: int | None = None
    head_calls: int | None = None
    head_turns: int | None = None

    @property
    def base_per_turn(self) -> float | None:
        return _ratio(self.base_calls, self.base_turns)

    @property
    def head_per_turn(self) -> float | None:
        return _ratio(self.head_calls, self.head_turns)


def _ratio(calls: int | None, turns: int | None) -> float | None:
    return None if calls is None or not turns else calls / turns


class AppChange(ReportModel):
    """One change in what an app target sent or did, base → head, the same on every turn
    it counts: 50 evals whose app dropped the same tool are one change (docs/targets.md,
    "What the app sent")."""

    what: str
    """`model calls per turn`, `model`, `system prompt`, `tools offered`, `tool calls`
    or `tokens per turn`."""
    before: str
    after: str
    """Base's and head's: the system prompts' text (cut at `MAX_APP_PROMPT_CHARS`), the
    tools offered, the tool calls in order, a count; `tokens per turn` the suite's mean."""
    summary: str = Field(default="", exclude_if=lambda value: not value)
    """`tools offered`: which were added (+), removed (−) or changed."""
    evals: list[str] = Field(default_factory=list)
    """The evals it was seen in (the first `NAMED_APP_EVALS`)."""
    eval_count: int = 0
    turns: int = 0
    """The turns it was seen on, over all those evals."""


class LatencySide(ReportModel):
    """One side's latency of the app's replies, over every turn of an app suite (live and
    record runs only: a replay's latencies are not today's)."""

    turns: int
    total_p50_ms: float
    total_p95_ms: float
    first_token_p50_ms: float | None = None
    first_token_p95_ms: float | None = None
    """Turns whose first token was measured (a streamed reply); None without any."""


class LatencyComparison(ReportModel):
    base: LatencySide
    head: LatencySide
    change_percent: float | None
    """Head's median total latency against base's, in percent; None when base's is 0."""
    p_value: float | None = None
    """One-sided Mann–Whitney p that head's turns exceed base's × (1 + threshold); None
    without a threshold or with too few turns on a side."""
    slower: bool = False
    """Head is slower than the threshold allows (p below `stats.latency.ALPHA`)."""


class SuiteComparison(ReportModel):
    path: str
    previous_path: str | None = None
    state: SuiteState
    name: str
    model: str
    deleted_in_pr: bool = False
    """Removed because the PR deleted the file (listed in `removed`)."""
    evals: list[EvalComparison]
    totals: Summary
    verdict: Verdict = Verdict.UNCHANGED
    """The suite-level verdict: the exact stratified test over its evals (a drop spread
    over many evals); `unchanged` with fewer than two evals judged on both sides."""
    p_value: float | None = None
    verdict_reason: str = ""
    pass_rate_change: float | None = None
    """Mean over the evals judged on both sides of head − base pass rate."""
    app_calls: AppCalls | None = Field(default=None, exclude_if=lambda value: value is None)
    """Set for a suite whose conversations are with an app (docs/targets.md)."""
    app_changes: list[AppChange] = Field(default_factory=list,
                                         exclude_if=lambda value: not value)
    """What the app sent or did differently at head, on the turns both sides ran, grouped
    (`compare/app_changes.py`); empty for a suite without an app or without a change."""
    latency: LatencyComparison | None = Field(default=None,
                                              exclude_if=lambda value: value is None)
    """An app suite run live or recorded on both sides: its replies' latency."""


class CostAlert(ReportModel):
    base_cost: float
    head_cost: float
    delta_usd: float
    delta_percent: float | None
    """None when the base cost is 0 (the increase is infinitely many percent)."""
    reasons: list[str]


class Comparison(ReportModel):
    kind: Literal["comparison"] = COMPARISON_KIND
    schema_version: int = COMPARISON_SCHEMA_VERSION
    base_commit: str | None
    head_commit: str | None
    has_base: bool
    mode: str
    price_source: PriceSource
    price_note: str | None = None
    """Set when base and head were priced differently."""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    thresholds: CostThresholds
    suites: list[SuiteComparison]
    totals: Summary
    cost_delta_percent: float | None
    """Total cost change in percent of base; None when undefined (unpriced, base 0)."""
    alert: CostAlert | None = None
    cost_note: str | None = None
    """Why costs could not be compared, when they could not."""
    calibration: list[CalibrationComparison] = Field(default_factory=list)
    """Per sample file: grader agreement base → head and the samples that flipped."""
    protocols: ProtocolComparison | None = None
    """Protocol suites: per case, per turn score deltas; None without any."""
    pooled_runs: int | None = None
    """Runs of main pooled into the base side (`compare.pool`); None when not pooled."""
    drift_sigma: float | None = None
    """The run-to-run drift (logit scale) the tests were widened by: a pooled base's, or
    the one estimated from base and head sampled in separate runs; None: neither."""
    baseline_note: str | None = None
    """Set when the pooled baseline is stale or drifting (`BasePool.note`)."""

    def located(self) -> list[Located]:
        """Every compared row, whatever its kind, with where it is: evals, protocol
        cases, sample files, in document order."""
        evals = [Located(e, s.path, s.name, s.previous_path or s.path, e.previous_name or e.name)
                 for s in self.suites for e in s.evals]
        cases = [Located(c, s.path, s.name, s.previous_path or s.path, c.name)
                 for s in (self.protocols.suites if self.protocols else []) for c in s.cases]
        files = [Located(f, f.path, f.path, f.previous_path or f.path, f.previous_path or f.path)
                 for f in self.calibration]
        return [*evals, *cases, *files]

    @property
    def regressions(self) -> int:
        return self.totals.counts.regressions

    @property
    def broken(self) -> int:
        return self.totals.counts.broken

    @property
    def passed(self) -> int:
        return self.totals.counts.passed

    @property
    def failed(self) -> int:
        return self.totals.counts.failed

    @property
    def errors(self) -> int:
        return self.totals.counts.errors
