"""Verdict tiers: one rule for every kind of case (eval, protocol case).

A case's *evidence* is built from its two sides' samples (`outcome_evidence` for
pass/fail-with-turn outcomes, `score_evidence` for scores); `decide` then adjusts
the p-values of all cases of a pull request together (Holm) and picks a tier:

1. `new` / `removed` when a side is missing; `inconclusive` when a side has no
   usable sample.
2. The head looks worse by at least the minimum effect (pass rate down by
   `min_effect`, or passing `min_turn_shift` turns later on average, or a score
   lower by `min_score_effect`):
   - the base passes less often than `min_base_rate` → `unreliable-baseline`
     (too flaky to judge against);
   - Holm-adjusted p ≤ `alpha` → `regression`;
   - raw p ≤ `likely_alpha`, or one sample per side (no test can decide with one
     sample; the flip stays visible) → `likely-regression`;
   - otherwise → `inconclusive`.
3. The head looks better by at least the minimum effect: adjusted p ≤ `alpha` →
   `improvement`, otherwise `inconclusive`.
4. Otherwise `unchanged`.

A one-sample flip therefore never reaches `regression`: with one sample per side
the smallest possible p-value is 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from turncheck.stats.multiplicity import tarone_holm
from turncheck.stats.tests import (
    ClusterScores,
    Outcome,
    ShiftTest,
    clustered_permutation_test,
    fisher_worse,
    mean_outcome_shift,
    turn_shift_test,
)


class Verdict(StrEnum):
    REGRESSION = "regression"
    LIKELY_REGRESSION = "likely-regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    UNRELIABLE_BASELINE = "unreliable-baseline"
    NEW = "new"
    REMOVED = "removed"


NO_TEST = ShiftTest(1.0, 1.0)
WORSE_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.LIKELY_REGRESSION})


@dataclass(frozen=True)
class VerdictSettings:
    alpha: float = 0.05
    """Family-wise false-alarm rate for `regression` (and, separately, `improvement`)."""
    likely_alpha: float = 0.2
    """Unadjusted p-value below which a worse-looking case is `likely-regression`."""
    min_effect: float = 0.2
    """Smallest pass-rate drop (0..1) that counts as worse."""
    min_turn_shift: float = 0.5
    """Smallest shift of the mean turn-of-pass (in turns) that counts as worse."""
    min_score_effect: float = 0.1
    """Smallest change of a mean score that counts, in the scores' own units (protocol
    case scores are 0..1: ten points)."""
    min_base_rate: float = 0.5
    """A base passing less often than this is too unreliable to call a regression against."""


DEFAULT_SETTINGS = VerdictSettings()


@dataclass(frozen=True)
class Evidence:
    """What the samples of one case say, before multiplicity adjustment."""

    present: bool = True
    """False for a case missing on one side (`new`/`removed` by `missing`)."""
    missing: Verdict | None = None
    test: ShiftTest = NO_TEST
    worse_effect: bool = False
    better_effect: bool = False
    base_unreliable: bool = False
    single_samples: bool = False
    empty: bool = False
    """A side has no usable sample."""
    pass_p_value: float | None = None
    """Fisher's exact one-sided p-value on pass counts alone (informational)."""
    rate_change: float | None = None
    """Head pass rate − base pass rate (or mean score change for scores)."""
    turn_shift: float | None = None
    """Mean turn-of-pass of head − base, over passing samples."""


def missing_evidence(base_present: bool) -> Evidence:
    return Evidence(present=False, missing=Verdict.REMOVED if base_present else Verdict.NEW)


def outcome_evidence(base: Sequence[Outcome], head: Sequence[Outcome],
                     settings: VerdictSettings = DEFAULT_SETTINGS) -> Evidence:
    """Evidence from pass/fail outcomes (the turn passed on, or None)."""
    if not base or not head:
        return Evidence(empty=True)
    base_passes = sum(t is not None for t in base)
    head_passes = sum(t is not None for t in head)
    base_rate, head_rate = base_passes / len(base), head_passes / len(head)
    shift = mean_outcome_shift(base, head)
    return Evidence(
        test=turn_shift_test(base, head),
        worse_effect=base_rate - head_rate >= settings.min_effect - 1e-9
        or shift >= settings.min_turn_shift - 1e-9,
        better_effect=head_rate - base_rate >= settings.min_effect - 1e-9
        or -shift >= settings.min_turn_shift - 1e-9,
        base_unreliable=base_rate < settings.min_base_rate - 1e-9,
        single_samples=len(base) == 1 and len(head) == 1,
        pass_p_value=fisher_worse(base_passes, len(base), head_passes, len(head)),
        rate_change=head_rate - base_rate,
        turn_shift=shift,
    )


def score_evidence(base: ClusterScores, head: ClusterScores, base_unreliable: bool = False,
                   settings: VerdictSettings = DEFAULT_SETTINGS) -> Evidence:
    """Evidence from scores: `base[c]`/`head[c]` are the sample scores of cluster c
    (one case has one cluster; a suite's aggregate has one per case)."""
    pairs = [(b, h) for b, h in zip(base, head, strict=True) if b and h]
    if not pairs:
        return Evidence(empty=True)
    change = sum(sum(h) / len(h) - sum(b) / len(b) for b, h in pairs) / len(pairs)
    return Evidence(
        test=clustered_permutation_test([b for b, _ in pairs], [h for _, h in pairs]),
        worse_effect=-change >= settings.min_score_effect - 1e-9,
        better_effect=change >= settings.min_score_effect - 1e-9,
        base_unreliable=base_unreliable,
        single_samples=all(len(b) == 1 and len(h) == 1 for b, h in pairs),
        rate_change=change,
    )


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    p_value: float | None
    """Holm-adjusted p-value in the direction of the verdict (worse for regressions,
    inconclusive and unchanged; better for improvements); None for new/removed."""
    p_worse: float | None
    p_better: float | None
    reason: str


def decide(evidence: Sequence[Evidence],
           settings: VerdictSettings = DEFAULT_SETTINGS) -> list[Decision]:
    """One decision per case, adjusting p-values across all of them (Holm, per direction)."""
    tested = [i for i, e in enumerate(evidence) if e.present and not e.empty]
    tests = [evidence[i].test for i in tested]
    worse = tarone_holm([t.worse for t in tests], [t.least_worse for t in tests], settings.alpha)
    better = tarone_holm([t.better for t in tests], [t.least_better for t in tests],
                         settings.alpha)
    adjusted = {i: (w, b) for i, w, b in zip(tested, worse, better, strict=True)}
    return [_decide_one(e, adjusted.get(i), settings) for i, e in enumerate(evidence)]


def _decide_one(evidence: Evidence, adjusted: tuple[float, float] | None,
                settings: VerdictSettings) -> Decision:
    if evidence.missing is not None:
        return Decision(evidence.missing, None, None, None, evidence.missing.value)
    if adjusted is None:
        return Decision(Verdict.INCONCLUSIVE, None, None, None, "a side has no usable sample")
    worse, better = adjusted
    raw = evidence.test.worse

    def decision(verdict: Verdict, reason: str, p: float = worse) -> Decision:
        return Decision(verdict, p, worse, better, reason)

    if evidence.worse_effect:
        if evidence.base_unreliable:
            return decision(Verdict.UNRELIABLE_BASELINE, "base passes too rarely to judge")
        if worse <= settings.alpha:
            return decision(Verdict.REGRESSION, f"worse, adjusted p ≤ {settings.alpha:g}")
        if evidence.single_samples:
            return decision(Verdict.LIKELY_REGRESSION, "worse on a single sample per side")
        if raw <= settings.likely_alpha:
            return decision(Verdict.LIKELY_REGRESSION, f"worse, raw p ≤ {settings.likely_alpha:g}")
        return decision(Verdict.INCONCLUSIVE, "worse, but too few samples to tell")
    if evidence.better_effect:
        if better <= settings.alpha:
            return decision(Verdict.IMPROVEMENT, f"better, adjusted p ≤ {settings.alpha:g}",
                            better)
        return decision(Verdict.INCONCLUSIVE, "better, but too few samples to tell", better)
    return decision(Verdict.UNCHANGED, "no change of at least the minimum effect")
