"""Base-vs-head grader calibration: agreement and distance per sample file, and the
samples whose verdict flipped.

Files pair by path (through `renames`, head path → base path); samples pair by id.
A sample *flips* when its verdict (agree, disagree, error) differs between base and
head; a flip away from "agree" is a regression. Agreement deltas are head − base in
percentage points.

The quadratically weighted κ of both sides is compared with its uncertainty: each
side's own bootstrap 95 % interval, and a paired bootstrap 95 % interval of the
difference head − base over the samples both sides scored (same ids). Head's κ is
*credibly lower* when the paired swap test (`swap_test_lower`) gives p ≤ 0.025, the
level of the lower tail of a 95 % interval (docs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from turncheck.compare.rows import pair_by_path, previous_path, state_of
from turncheck.report.calibration import (
    CalibrationFileResult,
    GraderVerdict,
    SampleGrade,
    is_below,
    percent_text,
)
from turncheck.report.calibration_comparison import (
    CalibrationComparison,
    CalibrationSide,
    CalibrationThresholds,
    FlippedSample,
    KappaComparison,
)
from turncheck.stats.agreement import LOWER_LEVEL, bootstrap_difference, swap_test_lower
from turncheck.text.counts import counted

_TOLERANCE = 1e-9


def _side(result: CalibrationFileResult | None) -> CalibrationSide | None:
    if result is None or not result.graded:
        return None
    return CalibrationSide(
        grader=result.grader, samples=len(result.samples), agreed=result.agreed,
        errors=result.errors, agreement_percent=result.agreement_percent,
        mean_distance=result.mean_distance, cost_usd=result.cost_usd,
        min_agreement=result.min_agreement, agreement=result.agreement,
    )


def _agreement(side: CalibrationSide | None) -> float | None:
    return None if side is None else side.agreement_percent


def _distance(side: CalibrationSide | None) -> float | None:
    return None if side is None else side.mean_distance


def _delta(base: float | None, head: float | None) -> float | None:
    return None if base is None or head is None else head - base


def flipped_samples(
    base: Sequence[SampleGrade], head: Sequence[SampleGrade]
) -> list[FlippedSample]:
    """Head samples (in order) whose verdict differs from the same id's at base."""
    at_base = {row.id: row for row in base}
    flipped = []
    for row in head:
        before = at_base.get(row.id)
        if before is None or before.verdict is row.verdict:
            continue
        flipped.append(FlippedSample(
            id=row.id, line=row.line, label=row.label, base_score=before.score,
            head_score=row.score, base_verdict=before.verdict, head_verdict=row.verdict,
            head_reason=row.reason, head_error=row.error,
            regression=before.verdict is GraderVerdict.AGREE,
        ))
    return flipped


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def compare_kappa(base: CalibrationFileResult, head: CalibrationFileResult
                  ) -> KappaComparison | None:
    """Both sides' weighted κ and the paired bootstrap interval of the difference."""
    before, after = base.agreement, head.agreement
    if before is None or after is None:
        return None
    scored = {row.id: row for row in base.samples if row.score is not None}
    pairs = [(scored[row.id], row) for row in head.samples
             if row.score is not None and row.id in scored]
    base_pairs = [(b.label, b.score or 0) for b, _ in pairs]
    head_pairs = [(h.label, h.score or 0) for _, h in pairs]
    interval = bootstrap_difference(base_pairs, head_pairs)
    p_lower = swap_test_lower(base_pairs, head_pairs)
    delta = _delta(before.weighted_kappa, after.weighted_kappa)
    return KappaComparison(
        base=before.weighted_kappa, base_low=before.weighted_kappa_low,
        base_high=before.weighted_kappa_high, head=after.weighted_kappa,
        head_low=after.weighted_kappa_low, head_high=after.weighted_kappa_high,
        delta=_rounded(delta), delta_low=_rounded(interval[0]) if interval else None,
        delta_high=_rounded(interval[1]) if interval else None, paired_samples=len(pairs),
        lower=p_lower is not None and p_lower <= LOWER_LEVEL,
    )


def compare_file(
    base: CalibrationFileResult | None, head: CalibrationFileResult | None
) -> CalibrationComparison:
    shown = head if head is not None else base
    assert shown is not None, "a calibration comparison needs at least one side"
    base_side, head_side = _side(base), _side(head)
    return CalibrationComparison(
        path=shown.path,
        previous_path=previous_path(base, head),
        state=state_of(base, head), note=head.note if head is not None else None,
        base=base_side, head=head_side,
        agreement_delta=_delta(_agreement(base_side), _agreement(head_side)),
        mean_distance_delta=_delta(_distance(base_side), _distance(head_side)),
        grader_changed=bool(base_side and head_side and base_side.grader != head_side.grader),
        flipped=flipped_samples(base.samples if base else [], head.samples if head else []),
        kappa=compare_kappa(base, head) if base_side and head_side and base and head else None,
    )


def compare_calibrations(
    base: Sequence[CalibrationFileResult] | None,
    head: Sequence[CalibrationFileResult],
    renames: Mapping[str, str],
) -> list[CalibrationComparison]:
    """Head files in order with their base (by path, through `renames`), then removed ones."""
    return [compare_file(b, h) for b, h in pair_by_path(base or [], head, renames)]


def calibration_reasons(
    comparisons: Sequence[CalibrationComparison], thresholds: CalibrationThresholds
) -> list[str]:
    """Why calibration fails the check: head error rows, agreement below the minimum
    (the threshold's, else the grader's own), or a drop larger than allowed."""
    reasons = []
    for item in comparisons:
        head = item.head
        if head is None:
            continue
        if head.errors:
            reasons.append(f"{item.path}: the grader could not score "
                           f"{counted(head.errors, 'sample')}")
        minimum = thresholds.min_agreement
        minimum = head.min_agreement if minimum is None else minimum
        agreement = head.agreement_percent
        if minimum is not None and agreement is not None and is_below(agreement, minimum):
            reasons.append(f"{item.path}: grader agreement {percent_text(agreement)} is below "
                           f"the minimum {percent_text(minimum)}")
        reasons += _drop_reason(item, thresholds.max_agreement_drop)
        reasons += _kappa_reason(item.path, head, thresholds.min_kappa)
    return reasons


def _kappa_reason(path: str, head: CalibrationSide, minimum: float | None) -> list[str]:
    kappa = head.agreement.weighted_kappa if head.agreement is not None else None
    if minimum is None or kappa is None or kappa >= minimum - _TOLERANCE:
        return []
    return [f"{path}: grader weighted kappa {kappa:.2f} is below the minimum {minimum:g}"]


def _drop_reason(item: CalibrationComparison, max_drop: float | None) -> list[str]:
    if max_drop is None or item.agreement_delta is None or item.base is None:
        return []
    drop = -item.agreement_delta
    if drop <= max_drop + _TOLERANCE:
        return []
    assert item.head is not None
    return [f"{item.path}: grader agreement dropped "
            f"{percent_text(item.base.agreement_percent)} → "
            f"{percent_text(item.head.agreement_percent)} "
            f"(more than {max_drop:g} points)"]
