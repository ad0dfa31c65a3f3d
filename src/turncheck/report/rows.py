"""Rows: what every kind of case shares. In a run report an eval, a protocol case and a
graded sample file each expose one `Row` (id, file and line, status, samples, spend);
in a comparison every row has a transition, each side's samples and spend, and the
statistical verdict, and rows are counted per status, transition and verdict.

How rows are paired, judged and counted is `compare/rows.py`; how they are shown,
`render/columns.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Generic, Protocol, TypeVar

from pydantic import Field, model_validator

from turncheck.report.model import ReportModel
from turncheck.report.results import USABLE, RepeatSummary, Status
from turncheck.report.spend import Spend
from turncheck.stats.verdicts import Unusable, Verdict


class RowKind(StrEnum):
    EVAL = "eval"
    CASE = "case"
    """A protocol suite's case."""
    SAMPLE_FILE = "sample file"
    """A sample file whose grader was calibrated: its samples are the row's samples."""

    @property
    def noun(self) -> str:
        """What a person calls one row of the kind."""
        return "protocol case" if self is RowKind.CASE else self.value


@dataclass(frozen=True)
class Row:
    """One case of any kind, as every view lists it."""

    kind: RowKind
    id: str
    """The eval's name, the case's id, the sample file's path."""
    file: str
    line: int | None
    status: Status
    passes: int
    """Samples that passed (for a sample file: that the grader scored as labelled)."""
    samples: int
    """Usable samples (passed or failed; for a sample file: the ones it graded)."""
    spend: Spend
    verdict: Verdict | None = None
    """The statistical verdict, in a comparison; None in a run report."""

    def count(self, status: Status) -> int:
        return int(self.status is status)


def samples_of(status: Status, repeats: RepeatSummary | None) -> tuple[int, int]:
    """(passes, usable samples) of an eval or a protocol case."""
    if repeats is not None:
        return repeats.passes, repeats.samples
    return int(status is Status.PASS), int(status in USABLE)


class Transition(StrEnum):
    FIXED = "fixed"
    BROKEN = "broken"
    STILL_FAILING = "still failing"
    TURN_CHANGED = "turn changed"
    UNCHANGED = "unchanged"
    NEW = "new"
    REMOVED = "removed"
    SKIPPED = "skipped"
    """Head did not finish the eval (a budget stopped it): neither a pass nor a fail."""
    ERRORED = "errored"
    """Head errored (provider down, timeout …): infrastructure, neither a pass nor a fail."""
    NOT_LIKE_FOR_LIKE = "not like-for-like"
    """The simulated user changed between base and head (its model, prompt, temperature,
    persona, goal …): the sides are not comparable, so nothing is blamed on the app."""


class SuiteState(StrEnum):
    NEW = "new"
    REMOVED = "removed"
    CHANGED = "changed"
    RENAMED = "renamed"


class SampleSide(Spend):
    """One row's result on one side: its spend and what its samples add up to."""

    passes: int = 0
    """k: passing samples (1 or 0 for an unrepeated row)."""
    samples: int = 1
    """n: usable samples (passed or failed): the ones the verdict's test sees."""
    pass_rate_low: float = 0.0
    """Wilson 95 % interval of the pass rate."""
    pass_rate_high: float = 1.0
    flaky: bool = False
    pass_hat_k: dict[str, float] = Field(default_factory=dict)
    """pass^k by k over the usable samples (`RepeatSummary.pass_hat_k`); empty for one
    sample."""
    errored: int = 0
    """Samples that errored: not evidence about the model, left out of `samples`."""
    skipped: int = 0
    """Samples not taken (a budget skipped them), left out of `samples`."""
    skip_reason: str | None = None
    """Why samples were skipped (`budget`)."""

    @property
    def spend(self) -> Spend:
        """The side's tokens and cost alone (without its samples' figures)."""
        return Spend.model_validate(self.model_dump(include=set(Spend.model_fields)))

    @property
    def unusable(self) -> Unusable:
        return Unusable(errors=self.errored, skipped=self.skipped,
                        skip_reason=self.skip_reason or "skipped")


class WithoutTurns:
    """What an eval's side says of its turns and a side of another kind has no
    counterpart for (`ComparedSide`): a protocol case's turns are compared one by one, a
    sample file has none. Its error is the row's."""

    @property
    def turn_of_pass(self) -> dict[str, int]:
        return {}

    @property
    def passed_on_turn(self) -> int | None:
        return None

    @property
    def failed_on_turn(self) -> int | None:
        return None

    @property
    def turns(self) -> int | None:
        return None

    @property
    def error(self) -> str | None:
        return None


class AlwaysComparable:
    """A row of a kind without a simulated user (a protocol case, a sample file): its
    two sides are always like-for-like (`EvalComparison.not_like_for_like`)."""

    @property
    def not_like_for_like(self) -> str | None:
        return None


class ComparedSide(Protocol):
    """One side of a compared row, whatever its kind: what its samples add up to, its
    spend, and the figures a kind may lack (None or empty there): a protocol case's mean
    score, an eval's turn of pass."""

    @property
    def status(self) -> Status | None: ...
    @property
    def passes(self) -> int: ...
    @property
    def samples(self) -> int: ...
    @property
    def errored(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def flaky(self) -> bool: ...
    @property
    def pass_rate_low(self) -> float: ...
    @property
    def pass_rate_high(self) -> float: ...
    @property
    def pass_hat_k(self) -> dict[str, float]: ...
    @property
    def total_cost_usd(self) -> float | None: ...
    @property
    def mean_score(self) -> float | None: ...
    @property
    def turn_of_pass(self) -> dict[str, int]: ...
    @property
    def passed_on_turn(self) -> int | None: ...
    @property
    def failed_on_turn(self) -> int | None: ...
    @property
    def turns(self) -> int | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def spend(self) -> Spend: ...


class VerdictRow(ReportModel):
    """The statistical verdict of one row from both sides' samples (docs/statistics.md)."""

    verdict: Verdict = Verdict.UNCHANGED
    p_value: float | None = None
    """Holm-adjusted exact one-sided p-value behind the verdict; None for new/removed,
    transitions and rows that could not be tested."""
    p_raw: float | None = None
    """The same test's unadjusted p-value (the likely-regression tier is decided on it)."""
    verdict_reason: str = ""
    verdict_cause: str | None = None
    """Why an `inconclusive` row could not be judged: `errors`, `budget`, `skipped`."""
    flaky: bool = False
    """The head passed on some samples and failed on others."""


class RowCounts(ReportModel):
    """How many rows of one kind have each head status, transition and verdict."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    """Head rows a budget stopped (their transition): not run, neither a pass nor a fail."""
    fixed: int = 0
    broken: int = 0
    still_failing: int = 0
    unchanged: int = 0
    new: int = 0
    removed: int = 0
    regressions: int = 0
    """Transition regressions (broken, or an eval passing on a later turn): the
    pre-statistics count."""
    verdicts: dict[str, int] = Field(default_factory=dict)
    """Rows per statistical verdict tier."""
    unjudged: dict[str, int] = Field(default_factory=dict)
    """Rows that could not be judged, per cause (`errors`, `budget`, `skipped`)."""
    flaky: int = 0
    """Head rows that passed on some samples and failed on others."""


SideT = TypeVar("SideT")


class RowComparison(VerdictRow, Generic[SideT]):
    """One compared row of any kind (an eval, a protocol case, a sample file): its
    transition and label, each side's status, the sides themselves (the kind's own side,
    read through `ComparedSide`), the spend delta, the head's line and error, and the
    statistical verdict. `compare/rows.compared_row` builds every kind's."""

    kind: ClassVar[RowKind]
    in_family: ClassVar[bool] = True
    """The row's verdict is decided in the pull request's one family of tests and is one of
    the comment's findings; a sample file's κ is judged apart (the calibration section)."""
    transition: Transition
    label: str = ""
    """Human label, e.g. `turn changed 1→3`; the transition's name when it says no more."""
    regression: bool = False
    """The pre-statistics label: broken (or an eval passing on a later turn)."""
    base_status: Status | None = None
    head_status: Status | None = None
    base: SideT | None = None
    head: SideT | None = None
    delta: Spend = Field(default_factory=Spend)
    line: int | None = None
    """The head row's line in its file, for annotations; None when removed or unknown."""
    error: str | None = None
    """The head's error text, when the head row errored."""

    @model_validator(mode="after")
    def _filled(self) -> RowComparison[SideT]:
        """A comparison written before a field was shared says it through the sides."""
        self.label = self.label or self.transition.value
        self.base_status = self.base_status or _status(self.base)
        self.head_status = self.head_status or _status(self.head)
        return self


def _status(side: object) -> Status | None:
    found = getattr(side, "status", None)
    return found if isinstance(found, Status) else None
