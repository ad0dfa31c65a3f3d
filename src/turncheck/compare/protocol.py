"""Base-vs-head comparison of protocol suites: per case, per turn score deltas and aggregates.

Suites pair by path (through `renames`), cases by id, turns by id. Deltas are
head − base, None when either side has no score. A case's transition is that of
an eval without turns: `fixed`, `broken` (a regression), `still failing`,
`unchanged` (pass both times; its scores may still move), `new`, `removed`.
Each case also gets a statistical `verdict` from its samples' weighted scores on both
sides (the clustered permutation test, `turncheck.stats.verdicts.score_evidence`),
decided together with the evals of the same comparison (docs/statistics.md).
Protocol spend is added to the comparison's totals (and so to the cost alert)
by `compare_reports`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import TypeVar

from turncheck.compare.rows import (
    count_rows,
    pair_by_path,
    pair_rows,
    previous_path,
    rounded,
    row_sides,
    sample_stats,
    state_of,
    transition_of,
    verdict_fields,
)
from turncheck.report.protocol import (
    CaseResult,
    ProtocolSuiteResult,
    ProtocolTurn,
    ScorerResult,
    ScorerSummary,
)
from turncheck.report.protocol_comparison import (
    CaseComparison,
    CaseSide,
    ProtocolComparison,
    ProtocolCounts,
    ProtocolSuiteComparison,
    ScoreChange,
    ScorerChange,
    TurnScoreComparison,
)
from turncheck.report.results import USABLE, Status
from turncheck.report.rows import Transition
from turncheck.report.run import Report
from turncheck.report.spend import add_costs, add_spend, spend_delta, spend_or_none
from turncheck.stats.adaptive import first_look
from turncheck.stats.verdicts import (
    DEFAULT_SETTINGS,
    Decision,
    Evidence,
    VerdictSettings,
    missing_evidence,
    score_evidence,
    status_transition,
)

AGGREGATES = ("interactive_reasoning", "final_f1", "self_correction")
"""A case's aggregates; the suite adds meta-cognition. Only the declared ones are compared."""
ScorerNames = Mapping[tuple[str, str], str]
"""(turn id, scorer id) → the suite's label for the scorer."""


def with_case_decisions(comparison: ProtocolComparison, evidence: Sequence[Evidence],
                        decisions: Sequence[Decision]) -> ProtocolComparison:
    """Every case with its decided verdict (in `protocol_evidence` order), and the
    counts again."""
    decided = iter(zip(evidence, decisions, strict=True))
    suites = []
    for suite in comparison.suites:
        cases = [_decided(case, *next(decided)) for case in suite.cases]
        suites.append(suite.model_copy(update={"cases": cases, "counts": _count(cases)}))
    return comparison.model_copy(update={
        "suites": suites, "counts": _count([c for s in suites for c in s.cases])})


def _decided(case: CaseComparison, evidence: Evidence, decision: Decision) -> CaseComparison:
    return case.model_copy(update={
        **verdict_fields(decision), "score_change": rounded(evidence.rate_change),
        "flaky": case.head is not None and case.head.flaky,
    })


# -- arithmetic ----------------------------------------------------------------------


def change(base: float | None, head: float | None) -> ScoreChange:
    delta = None if base is None or head is None else head - base
    return ScoreChange(base=base, head=head, delta=delta)


# -- cases ---------------------------------------------------------------------------


def _rating(result: ScorerResult | None) -> float | None:
    return None if result is None or result.judge_scale is None \
        else float(result.judge_scale.rating)


def _scale(*results: ScorerResult | None) -> list[int] | None:
    return next((r.judge_scale.scale for r in results if r is not None and r.judge_scale),
                None)


def _scorer_changes(old: ProtocolTurn | None, new: ProtocolTurn | None,
                    names: ScorerNames) -> list[ScorerChange]:
    before = {r.id: r for r in old.scorers} if old else {}
    after = {r.id: r for r in new.scorers} if new else {}
    either = new or old
    turn = either.id if either is not None else ""
    return [ScorerChange(
        **change(b.score if b else None, h.score if h else None).model_dump(),
        id=scorer_id, name=names.get((turn, scorer_id), scorer_id), type=shown.type,
        turn=turn, scale=_scale(h, b), base_rating=_rating(b), head_rating=_rating(h))
        for scorer_id, b, h, shown in _head_first(before, after)]


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

def _head_first(before: Mapping[K, V], after: Mapping[K, V]
                ) -> Iterator[tuple[K, V | None, V | None, V]]:
    """Each key of either side (head's order, then base's only ones): its base value,
    its head value, and the one to show (head's, else base's)."""
    for key in [*after, *(k for k in before if k not in after)]:
        b, h = before.get(key), after.get(key)
        shown = h if h is not None else b
        assert shown is not None
        yield key, b, h, shown


def _turns(base: CaseResult | None, head: CaseResult | None,
           turn_ids: Sequence[str], names: ScorerNames) -> list[TurnScoreComparison]:
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
            scorers=_scorer_changes(old, new, names),
        ))
    return rows


def usable_samples(case: CaseResult) -> list[tuple[Status, float | None]]:
    """Each usable (passed or failed) sample's status and weighted score."""
    if not case.samples:
        pairs = [(case.status, case.aggregates.interactive_reasoning)]
    else:
        pairs = [(s.status, s.score) for s in case.samples]
    return [(status, score) for status, score in pairs if status in USABLE]


def sample_scores(case: CaseResult) -> list[float]:
    """Each usable sample's weighted score; a failed sample that ended without one counts
    as 0, the worst score. Errored and skipped samples are left out."""
    return [0.0 if score is None else score for _, score in usable_samples(case)]


def case_side(case: CaseResult) -> CaseSide:
    scores = sample_scores(case)
    statuses = [s.status for s in case.samples] or [case.status]
    return CaseSide(
        **case.spend.model_dump(),
        **sample_stats(statuses, "budget" if Status.SKIPPED in statuses else None),
        status=case.status, mean_score=rounded(sum(scores) / len(scores)) if scores else None,
        scores=[round(score, 6) for score in scores],
        first_look=first_look(case.repeats.max_repeat)
        if case.repeats is not None and case.repeats.adaptive else None,
    )


def case_evidence(case: CaseComparison, settings: VerdictSettings = DEFAULT_SETTINGS
                  ) -> Evidence:
    """Score evidence for one case: its own cluster of usable samples on each side. A base
    that passes less often than `min_base_rate` is too unreliable to judge against."""
    if case.base is None or case.head is None:
        return missing_evidence(case.base is not None)
    base, head = case.base, case.head
    unreliable = base.samples > 0 and base.passes / base.samples < settings.min_base_rate - 1e-9
    return score_evidence(
        [base.scores[:base.first_look]], [head.scores[:head.first_look]], unreliable, settings,
        base_lost=base.unusable, head_lost=head.unusable,
        transition=status_transition(base.passes == base.samples == 1,
                                     head.passes == head.samples == 1))


def protocol_evidence(comparison: ProtocolComparison,
                      settings: VerdictSettings = DEFAULT_SETTINGS) -> list[Evidence]:
    return [case_evidence(c, settings) for suite in comparison.suites for c in suite.cases]


def compare_cases(base: CaseResult | None, head: CaseResult | None,
                  turn_ids: Sequence[str], declared: Sequence[str] = AGGREGATES,
                  names: ScorerNames | None = None) -> CaseComparison:
    """`declared`: the aggregates the suite declares (others are not compared)."""
    shown = head if head is not None else base
    assert shown is not None, "a case comparison needs at least one side"
    transition = transition_of(base.status if base else None, head.status if head else None)
    return CaseComparison(
        id=shown.id, transition=transition, regression=transition is Transition.BROKEN,
        base_status=base.status if base else None, head_status=head.status if head else None,
        turns=_turns(base, head, turn_ids, names or {}),
        aggregates={
            name: change(getattr(base.aggregates, name) if base else None,
                         getattr(head.aggregates, name) if head else None)
            for name in declared if name in AGGREGATES
        },
        **row_sides(base, head, case_side),
    )


def _count(cases: Sequence[CaseComparison]) -> ProtocolCounts:
    return count_rows(cases, ProtocolCounts(), "cases")


# -- suites --------------------------------------------------------------------------


def _turn_ids(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None) -> list[str]:
    ids = [t.id for t in head.turns] if head else []
    ids += [t.id for t in (base.turns if base else []) if t.id not in ids]
    return ids


def _declared_scorers(suite: ProtocolSuiteResult | None) -> dict[tuple[str, str], ScorerSummary]:
    if suite is None:
        return {}
    return {(t.id, s.id): s for t in suite.turns for s in t.scorers}


def _scorer_means(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None
                  ) -> list[ScorerChange]:
    """Every declared scorer's mean over the cases, base → head (head's order first)."""
    before, after = _declared_scorers(base), _declared_scorers(head)
    return [ScorerChange(
        **change(b.mean_score if b else None, h.mean_score if h else None).model_dump(),
        id=shown.id, name=shown.name, type=shown.type, turn=key[0], scale=shown.scale,
        base_rating=b.mean_rating if b else None, head_rating=h.mean_rating if h else None)
        for key, b, h, shown in _head_first(before, after)]


def compare_protocol_suites(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None
                            ) -> ProtocolSuiteComparison:
    shown = head if head is not None else base
    assert shown is not None, "a suite comparison needs at least one side"
    turn_ids = _turn_ids(base, head)
    labels = shown.labels()
    scorers = _scorer_means(base, head)
    names = {(s.turn, s.id): s.name for s in scorers}
    cases = [compare_cases(b, h, turn_ids, list(labels), names)
             for b, h, _ in pair_rows(base.cases if base else [], head.cases if head else [],
                                      ("id",))]
    base_spend, head_spend = spend_or_none(base), spend_or_none(head)
    return ProtocolSuiteComparison(
        path=shown.path, previous_path=previous_path(base, head), state=state_of(base, head),
        name=shown.name, model=shown.model, pass_threshold=shown.pass_threshold,
        turn_ids=turn_ids, cases=cases,
        aggregates={
            name: change(getattr(base.aggregates, name) if base else None,
                         getattr(head.aggregates, name) if head else None)
            for name in labels
        },
        labels=labels, scorers=scorers,
        meta_cognition_note=shown.aggregates.meta_cognition_note,
        base=base_spend, head=head_spend, delta=spend_delta(base_spend, head_spend),
        counts=_count(cases),
    )


def compare_protocols(base: Report | None, head: Report, *,
                      renames: Mapping[str, str] | None = None) -> ProtocolComparison | None:
    """None when neither report has a protocol suite; any base suite missing from head is
    removed. Verdicts are decided afterwards (`with_case_decisions`)."""
    base_suites = base.protocols if base is not None else []
    if not base_suites and not head.protocols:
        return None
    suites = [compare_protocol_suites(b, h)
              for b, h in pair_by_path(base_suites, head.protocols, renames or {})]
    bases = [s.base for s in suites if s.base is not None]
    heads = [s.head for s in suites if s.head is not None]
    base_total = add_spend(bases) if base is not None else None
    head_total = add_spend(heads)
    return ProtocolComparison(
        suites=suites, counts=_count([c for s in suites for c in s.cases]), base=base_total,
        head=head_total, delta=spend_delta(base_total, head_total),
    )
