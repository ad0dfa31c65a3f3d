"""What every kind of comparison row shares (evals, protocol cases, sample files; suites
and files): the one row comparison (`compare_rows`, `compared_row`), pairing by path,
the status transition, a side's sample statistics, the statistical verdict put back on
a row (`with_verdict`) and the counts.

Per kind stays only what differs, plugged in as its `RowRules`: how its rows pair up,
its side and own fields; and its scoring: the evidence a side's samples give (pass/fail
with the turn of pass for evals, scores for protocol cases, a sample file's κ).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from turncheck.report.comparison import ComparedRow, Comparison
from turncheck.report.results import USABLE, Status
from turncheck.report.rows import (
    RowComparison,
    RowCounts,
    RowKind,
    SuiteState,
    Transition,
    VerdictRow,
)
from turncheck.report.spend import Spend, spend_delta
from turncheck.stats.rates import pass_k_table, wilson_interval
from turncheck.stats.verdicts import (
    DEFAULT_SETTINGS,
    Decision,
    Evidence,
    VerdictSettings,
    decide,
)


def transition_of(base: Status | None, head: Status | None, *,
                  turns: tuple[int | None, int | None] = (None, None),
                  like_for_like: bool = True) -> Transition:
    """A row's base → head transition from each side's status (None: the row is not on
    that side) and, for rows that pass on a turn (evals), the turn each side passed on."""
    if not like_for_like:
        return Transition.NOT_LIKE_FOR_LIKE
    if base is None:
        return Transition.NEW
    if head is None:
        return Transition.REMOVED
    if head is Status.SKIPPED:
        return Transition.SKIPPED
    if head is Status.ERROR:
        return Transition.ERRORED
    base_passed, head_passed = base is Status.PASS, head is Status.PASS
    if base_passed and head_passed:
        return Transition.UNCHANGED if turns[0] == turns[1] else Transition.TURN_CHANGED
    if head_passed:
        return Transition.FIXED
    return Transition.BROKEN if base_passed else Transition.STILL_FAILING


Matched = TypeVar("Matched")
Key = TypeVar("Key", bound=str)


def pair_rows(base: Sequence[Matched], head: Sequence[Matched], keys: Sequence[Key]
              ) -> list[tuple[Matched | None, Matched | None, Key | None]]:
    """Head rows in order with their base match and the key it matched by (the first key
    for every row, then the next: a later key cannot take another row's match by an
    earlier one), then the base rows left over (removed)."""
    unmatched = list(base)
    found: list[tuple[Matched | None, Key | None]] = [(None, None)] * len(head)
    for key in keys:
        for index, row in enumerate(head):
            match = _take(unmatched, key, row) if found[index][0] is None else None
            if match is not None:
                found[index] = (match, key)
    pairs = [(match, row, key) for (match, key), row in zip(found, head, strict=True)]
    return [*pairs, *((row, None, None) for row in unmatched)]


def _take(candidates: list[Matched], key: str, wanted: Matched) -> Matched | None:
    for candidate in candidates:
        if getattr(candidate, key) == getattr(wanted, key):
            candidates.remove(candidate)
            return candidate
    return None


Result = TypeVar("Result")
Compared = TypeVar("Compared", bound=RowComparison[Any])
Pair = tuple[Result | None, Result | None, str | None]


def _no_turn(result: object) -> int | None:
    return None


def _comparable(base: object, head: object) -> str | None:
    return None


def _plain_label(transition: Transition, base: object, head: object) -> str:
    return transition.value


def _broken(transition: Transition, base: object, head: object) -> bool:
    return transition is Transition.BROKEN


@dataclass(frozen=True)
class RowRules(Generic[Result, Compared]):
    """What a kind of row plugs into the one row comparison (`compare_rows`): how its
    rows pair up, what a side and the spend of one result are, and the kind's own fields;
    the rest (transition, label, statuses, sides, spend delta, line, error) is every
    kind's. An eval also passes on a turn and may not be like-for-like."""

    model: type[Compared]
    pair: Callable[[Sequence[Result], Sequence[Result]], list[Pair[Result]]]
    side: Callable[[Result], Any]
    spend: Callable[[Result], Spend]
    status: Callable[[Result], Status]
    line: Callable[[Result], int | None]
    error: Callable[[Result], str | None]
    own: Callable[[Result | None, Result | None, str | None], dict[str, Any]]
    """The kind's own fields of a row, from its base, its head and the key it paired by."""
    passed_on: Callable[[Result], int | None] = _no_turn
    unlike: Callable[[Result | None, Result | None], str | None] = _comparable
    """Why the two sides are not comparable (an eval's simulated user changed)."""
    label: Callable[[Transition, Result | None, Result | None], str] = _plain_label
    regression: Callable[[Transition, Result | None, Result | None], bool] = _broken


def compare_rows(rules: RowRules[Result, Compared], base: Sequence[Result],
                 head: Sequence[Result]) -> list[Compared]:
    """Every row of one kind, base → head: head rows in order, then the removed ones."""
    return rows_of(rules, rules.pair(base, head))


def rows_of(rules: RowRules[Result, Compared], pairs: Iterable[Pair[Result]]
            ) -> list[Compared]:
    """The rows of pairs already made (`rules.pair`)."""
    return [compared_row(rules, b, h, key) for b, h, key in pairs]


def compared_row(rules: RowRules[Result, Compared], base: Result | None, head: Result | None,
                 key: str | None = None) -> Compared:
    """One row of any kind, its verdict not yet decided (`with_verdict`)."""
    assert base is not None or head is not None, "a compared row needs at least one side"
    transition = transition_of(
        None if base is None else rules.status(base), None if head is None else rules.status(head),
        turns=(None if base is None else rules.passed_on(base),
               None if head is None else rules.passed_on(head)),
        like_for_like=rules.unlike(base, head) is None)
    base_side = None if base is None else rules.side(base)
    head_side = None if head is None else rules.side(head)
    return rules.model(
        transition=transition, label=rules.label(transition, base, head),
        regression=rules.regression(transition, base, head),
        base_status=None if base is None else rules.status(base),
        head_status=None if head is None else rules.status(head),
        base=base_side, head=head_side,
        delta=spend_delta(None if base is None else rules.spend(base),
                          None if head is None else rules.spend(head)),
        line=None if head is None else rules.line(head),
        error=None if head is None else rules.error(head),
        **rules.own(base, head, key))


def with_verdict(row: Compared, decision: Decision, **figures: float | None) -> Compared:
    """The row with its decided verdict and the `figures` its evidence gives."""
    return row.model_copy(update={
        **verdict_fields(decision), **{name: rounded(value) for name, value in figures.items()},
        "flaky": row.head is not None and row.head.flaky,
    })


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


def sample_stats(statuses: Sequence[Status], skip_reason: str | None = None) -> dict[str, Any]:
    """`SampleSide` fields from each sample's status; errored and skipped samples are
    counted apart, never as failures."""
    passes = sum(s is Status.PASS for s in statuses)
    usable = sum(s in USABLE for s in statuses)
    low, high = wilson_interval(passes, usable)
    skipped = sum(s is Status.SKIPPED for s in statuses)
    return {"passes": passes, "samples": usable, "pass_rate_low": round(low, 6),
            "pass_rate_high": round(high, 6), "flaky": 0 < passes < usable,
            "pass_hat_k": pass_k_table(passes, usable)[0] if usable > 1 else {},
            "errored": sum(s is Status.ERROR for s in statuses), "skipped": skipped,
            "skip_reason": skip_reason if skipped else None}


# -- verdicts ------------------------------------------------------------------------


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


def verdict_counts(rows: Iterable[VerdictRow | ComparedRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict.value] = counts.get(row.verdict.value, 0) + 1
    return counts



# -- counts --------------------------------------------------------------------------


Counted = TypeVar("Counted", bound=RowCounts)


def count_rows(rows: Iterable[ComparedRow], counts: Counted, heads: str | None = None
               ) -> Counted:
    """`counts` filled from `rows`; `heads` names the field that counts head rows
    (removed rows have no head and are not counted there), if it has one."""
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
        if status is not None and heads is not None:
            setattr(counts, heads, getattr(counts, heads) + 1)
        if status is not None:
            counts.flaky += row.flaky
            counts.passed += status is Status.PASS
            counts.failed += status is Status.FAIL
            counts.errors += status is Status.ERROR
    return counts


@dataclass(frozen=True)
class KindCounts:
    """The rows of one kind counted: per status, transition and verdict (`RowCounts`)
    and how many have a head."""

    kind: RowKind
    counts: RowCounts
    heads: int


def family_counts(comparison: Comparison) -> list[KindCounts]:
    """Each kind of the rows judged in the pull request's family (evals, protocol cases),
    counted in one pass over the comparison's rows; in document order."""
    by_kind: dict[RowKind, list[ComparedRow]] = {}
    for found in comparison.located():
        if found.row.in_family:
            by_kind.setdefault(found.row.kind, []).append(found.row)
    return [KindCounts(kind, count_rows(rows, RowCounts()),
                       sum(row.head_status is not None for row in rows))
            for kind, rows in by_kind.items()]
