"""What every kind of comparison row shares (evals, protocol cases; suites and files):
pairing by path, the status transition, a side's sample statistics and the statistical
verdict, decided for all rows of a pull request together.

Per kind stays only what differs: how rows match inside a suite, which evidence a side's
samples give (pass/fail with the turn of pass for evals, scores for protocol cases) and
its own columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from pydantic import Field

from turncheck.compare.spend import Spend
from turncheck.engine.repeats import USABLE
from turncheck.report.model import ReportModel
from turncheck.report.results import Status
from turncheck.stats.rates import wilson_interval
from turncheck.stats.verdicts import (
    DEFAULT_SETTINGS,
    Decision,
    Evidence,
    Unusable,
    Verdict,
    VerdictSettings,
    decide,
)


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


class SuiteState(StrEnum):
    NEW = "new"
    REMOVED = "removed"
    CHANGED = "changed"
    RENAMED = "renamed"


class _Pathed(Protocol):
    @property
    def path(self) -> str: ...


Item = TypeVar("Item", bound=_Pathed)


def pair_by_path(base: Sequence[Item], head: Sequence[Item], renames: Mapping[str, str]
                 ) -> list[tuple[Item | None, Item | None]]:
    """Head items in order with their base (by path, through `renames`: head path → base
    path), then the removed ones. Renamed items claim their old path first, so a new file
    there cannot take it."""
    unmatched = {item.path: item for item in base}
    claimed = {item.path: unmatched.pop(renames[item.path], None)
               for item in head if item.path in renames}
    pairs: list[tuple[Item | None, Item | None]] = [
        (claimed[item.path] if item.path in claimed else unmatched.pop(item.path, None), item)
        for item in head
    ]
    pairs.extend((item, None) for item in unmatched.values())
    return pairs


def state_of(base: _Pathed | None, head: _Pathed | None) -> SuiteState:
    if base is None:
        return SuiteState.NEW
    if head is None:
        return SuiteState.REMOVED
    return SuiteState.CHANGED if base.path == head.path else SuiteState.RENAMED


def previous_path(base: _Pathed | None, head: _Pathed | None) -> str | None:
    if base is None or head is None or base.path == head.path:
        return None
    return base.path


# -- a side's samples ----------------------------------------------------------------


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
    errored: int = 0
    """Samples that errored: not evidence about the model, left out of `samples`."""
    skipped: int = 0
    """Samples not taken (a budget skipped them), left out of `samples`."""
    skip_reason: str | None = None
    """Why samples were skipped (`budget`)."""

    @property
    def unusable(self) -> Unusable:
        return Unusable(errors=self.errored, skipped=self.skipped,
                        skip_reason=self.skip_reason or "skipped")


def sample_stats(statuses: Sequence[Status], skip_reason: str | None = None) -> dict[str, Any]:
    """`SampleSide` fields from each sample's status; errored and skipped samples are
    counted apart, never as failures."""
    passes = sum(s is Status.PASS for s in statuses)
    usable = sum(s in USABLE for s in statuses)
    low, high = wilson_interval(passes, usable)
    skipped = sum(s is Status.SKIPPED for s in statuses)
    return {"passes": passes, "samples": usable, "pass_rate_low": round(low, 6),
            "pass_rate_high": round(high, 6), "flaky": 0 < passes < usable,
            "errored": sum(s is Status.ERROR for s in statuses), "skipped": skipped,
            "skip_reason": skip_reason if skipped else None}


# -- verdicts ------------------------------------------------------------------------


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


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def verdict_fields(decision: Decision) -> dict[str, Any]:
    return {"verdict": decision.verdict, "p_value": rounded(decision.p_value),
            "p_raw": rounded(decision.p_raw),
            "verdict_reason": decision.reason, "verdict_cause": decision.cause}


def decide_groups(groups: Sequence[Sequence[Evidence]],
                  settings: VerdictSettings = DEFAULT_SETTINGS) -> list[list[Decision]]:
    """Decisions for every group's rows, adjusted for multiplicity across all groups
    together (evals and protocol cases of one pull request are one family)."""
    decided = iter(decide([e for group in groups for e in group], settings))
    return [[next(decided) for _ in group] for group in groups]


def verdict_counts(rows: Iterable[VerdictRow | CountedRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict.value] = counts.get(row.verdict.value, 0) + 1
    return counts



# -- counts --------------------------------------------------------------------------


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


class CountedRow(Protocol):
    @property
    def transition(self) -> Transition: ...
    @property
    def regression(self) -> bool: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def verdict_cause(self) -> str | None: ...
    @property
    def flaky(self) -> bool: ...
    @property
    def head_status(self) -> Status | None: ...


Counted = TypeVar("Counted", bound=RowCounts)


def count_rows(rows: Iterable[CountedRow], counts: Counted, heads: str) -> Counted:
    """`counts` filled from `rows`; `heads` names the field that counts head rows
    (removed rows have no head and are not counted there)."""
    rows = list(rows)
    counts.verdicts = verdict_counts(rows)
    for row in rows:
        cause = row.verdict_cause
        if cause is not None:
            counts.unjudged[cause] = counts.unjudged.get(cause, 0) + 1
        name = row.transition.value.replace(" ", "_")
        if name in type(counts).model_fields:
            setattr(counts, name, getattr(counts, name) + 1)
        counts.regressions += row.regression
        status = row.head_status
        if status is not None:
            setattr(counts, heads, getattr(counts, heads) + 1)
            counts.flaky += row.flaky
            counts.passed += status is Status.PASS
            counts.failed += status is Status.FAIL
            counts.errors += status is Status.ERROR
    return counts
