"""Base-vs-head comparison of protocol suites: per case, per turn score deltas and aggregates.

Suites pair by path (through `renames`), cases by id, turns by id. Deltas are
head − base, None when either side has no score. A case's transition is that of
an eval without turns: `fixed`, `broken` (a regression), `still failing`,
`unchanged` (pass both times; its scores may still move), `new`, `removed`.
Protocol spend is added to the comparison's totals (and so to the cost alert)
by `compare_reports`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import Field

from turncheck.compare.comparison import (
    Comparison,
    Spend,
    SuiteState,
    Summary,
    Transition,
    add_spend,
    spend_delta,
    spend_of,
)
from turncheck.engine.model import ReportModel
from turncheck.engine.pricing import add_costs
from turncheck.engine.protocol_report import CaseResult, ProtocolSuiteResult
from turncheck.engine.report import Report, Status

AGGREGATES = ("interactive_reasoning", "final_f1", "self_correction")
SUITE_AGGREGATES = (*AGGREGATES, "meta_cognition")


class ScoreChange(ReportModel):
    base: float | None = None
    head: float | None = None
    delta: float | None = None


class TurnScoreComparison(ScoreChange):
    id: str
    base_variant: str | None = None
    head_variant: str | None = None
    tokens: int | None = None
    """Head tokens of this turn (model and judge)."""
    cost_usd: float | None = None
    """Head cost of this turn (model and judge)."""


class CaseComparison(ReportModel):
    id: str
    transition: Transition
    regression: bool
    base_status: Status | None
    head_status: Status | None
    turns: list[TurnScoreComparison] = Field(default_factory=list)
    aggregates: dict[str, ScoreChange] = Field(default_factory=dict)
    base: Spend | None = None
    head: Spend | None = None
    delta: Spend = Field(default_factory=Spend)
    error: str | None = None
    """Head error, when the head case errored."""
    line: int | None = None


class ProtocolCounts(ReportModel):
    cases: int = 0
    """Head cases (removed ones are not counted here)."""
    passed: int = 0
    failed: int = 0
    errors: int = 0
    fixed: int = 0
    broken: int = 0
    still_failing: int = 0
    unchanged: int = 0
    new: int = 0
    removed: int = 0
    regressions: int = 0


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


# -- arithmetic ----------------------------------------------------------------------


def change(base: float | None, head: float | None) -> ScoreChange:
    delta = None if base is None or head is None else head - base
    return ScoreChange(base=base, head=head, delta=delta)


# -- cases ---------------------------------------------------------------------------


def case_transition(base: CaseResult | None, head: CaseResult | None) -> Transition:
    if base is None:
        return Transition.NEW
    if head is None:
        return Transition.REMOVED
    base_passed, head_passed = base.status is Status.PASS, head.status is Status.PASS
    if base_passed and head_passed:
        return Transition.UNCHANGED
    if head_passed:
        return Transition.FIXED
    return Transition.BROKEN if base_passed else Transition.STILL_FAILING


def _turns(base: CaseResult | None, head: CaseResult | None,
           turn_ids: Sequence[str]) -> list[TurnScoreComparison]:
    before = {t.id: t for t in base.turns} if base else {}
    after = {t.id: t for t in head.turns} if head else {}
    rows = []
    for turn_id in turn_ids:
        old, new = before.get(turn_id), after.get(turn_id)
        if old is None and new is None:
            continue
        scores = change(old.score if old else None, new.score if new else None)
        rows.append(TurnScoreComparison(
            **scores.model_dump(), id=turn_id,
            base_variant=old.variant if old else None,
            head_variant=new.variant if new else None,
            tokens=None if new is None else new.usage.total + new.judge_usage.total,
            cost_usd=None if new is None else add_costs([new.cost_usd, new.judge_cost_usd]),
        ))
    return rows


def compare_cases(base: CaseResult | None, head: CaseResult | None,
                  turn_ids: Sequence[str]) -> CaseComparison:
    shown = head if head is not None else base
    assert shown is not None, "a case comparison needs at least one side"
    transition = case_transition(base, head)
    base_spend = spend_of(base) if base is not None else None
    head_spend = spend_of(head) if head is not None else None
    return CaseComparison(
        id=shown.id, transition=transition, regression=transition is Transition.BROKEN,
        base_status=base.status if base else None, head_status=head.status if head else None,
        turns=_turns(base, head, turn_ids),
        aggregates={
            name: change(getattr(base.aggregates, name) if base else None,
                         getattr(head.aggregates, name) if head else None)
            for name in AGGREGATES
        },
        base=base_spend, head=head_spend, delta=spend_delta(base_spend, head_spend),
        error=head.error if head else None, line=head.line if head else None,
    )


def _count(cases: Sequence[CaseComparison]) -> ProtocolCounts:
    counts = ProtocolCounts()
    for case in cases:
        name = case.transition.value.replace(" ", "_")
        if hasattr(counts, name):
            setattr(counts, name, getattr(counts, name) + 1)
        counts.regressions += case.regression
        if case.head_status is not None:
            counts.cases += 1
            counts.passed += case.head_status is Status.PASS
            counts.failed += case.head_status is Status.FAIL
            counts.errors += case.head_status is Status.ERROR
    return counts


def _sum_counts(parts: Sequence[ProtocolCounts]) -> ProtocolCounts:
    total = ProtocolCounts()
    for part in parts:
        for name in ProtocolCounts.model_fields:
            setattr(total, name, getattr(total, name) + getattr(part, name))
    return total


# -- suites --------------------------------------------------------------------------


def _turn_ids(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None) -> list[str]:
    ids = [t.id for t in head.turns] if head else []
    ids += [t.id for t in (base.turns if base else []) if t.id not in ids]
    return ids


def compare_protocol_suites(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None
                            ) -> ProtocolSuiteComparison:
    shown = head if head is not None else base
    assert shown is not None, "a suite comparison needs at least one side"
    turn_ids = _turn_ids(base, head)
    before = {c.id: c for c in base.cases} if base else {}
    after_ids = {c.id for c in head.cases} if head else set()
    cases = [compare_cases(before.get(c.id), c, turn_ids) for c in (head.cases if head else [])]
    cases += [compare_cases(c, None, turn_ids) for c in before.values() if c.id not in after_ids]
    base_spend = spend_of(base) if base is not None else None
    head_spend = spend_of(head) if head is not None else None
    state = SuiteState.NEW if base is None else SuiteState.REMOVED if head is None else (
        SuiteState.CHANGED if base.path == head.path else SuiteState.RENAMED
    )
    return ProtocolSuiteComparison(
        path=shown.path,
        previous_path=base.path if base and head and base.path != head.path else None,
        state=state, name=shown.name, model=shown.model, pass_threshold=shown.pass_threshold,
        turn_ids=turn_ids, cases=cases,
        aggregates={
            name: change(getattr(base.aggregates, name) if base else None,
                         getattr(head.aggregates, name) if head else None)
            for name in SUITE_AGGREGATES
        },
        meta_cognition_note=shown.aggregates.meta_cognition_note,
        base=base_spend, head=head_spend, delta=spend_delta(base_spend, head_spend),
        counts=_count(cases),
    )


Pair = tuple[ProtocolSuiteResult | None, ProtocolSuiteResult | None]


def pair_protocols(base: Sequence[ProtocolSuiteResult], head: Sequence[ProtocolSuiteResult],
                   renames: Mapping[str, str]) -> list[Pair]:
    """Head suites in order with their base (by path, through `renames`), then removed ones."""
    unmatched = {suite.path: suite for suite in base}
    claimed = {s.path: unmatched.pop(renames[s.path], None) for s in head if s.path in renames}
    pairs: list[Pair] = [
        (claimed[s.path] if s.path in claimed else unmatched.pop(s.path, None), s) for s in head
    ]
    pairs.extend((suite, None) for suite in unmatched.values())
    return pairs


def compare_protocols(base: Report | None, head: Report, *,
                      renames: Mapping[str, str] | None = None,
                      removed: Collection[str] = ()) -> ProtocolComparison | None:
    """None when neither report has a protocol suite. (`removed` is accepted for symmetry
    with evals; any base suite missing from head is removed.)"""
    base_suites = base.protocols if base is not None else []
    if not base_suites and not head.protocols:
        return None
    suites = [compare_protocol_suites(b, h)
              for b, h in pair_protocols(base_suites, head.protocols, renames or {})]
    bases = [s.base for s in suites if s.base is not None]
    heads = [s.head for s in suites if s.head is not None]
    base_total = add_spend(bases) if base is not None else None
    head_total = add_spend(heads)
    return ProtocolComparison(
        suites=suites, counts=_sum_counts([s.counts for s in suites]), base=base_total,
        head=head_total, delta=spend_delta(base_total, head_total),
    )


def with_protocol_spend(totals: Summary, protocols: ProtocolComparison | None) -> Summary:
    """`totals` with the protocol suites' tokens and cost added (counts are the evals')."""
    if protocols is None:
        return totals
    base = None if totals.base is None else add_spend(
        [totals.base, *([protocols.base] if protocols.base else [])]
    )
    head = add_spend([*([totals.head] if totals.head else []),
                      *([protocols.head] if protocols.head else [])])
    return Summary(base=base, head=head, delta=spend_delta(base, head), counts=totals.counts)


Comparison.model_rebuild(_types_namespace={"ProtocolComparison": ProtocolComparison})
