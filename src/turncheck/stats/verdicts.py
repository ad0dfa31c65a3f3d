"""Verdict tiers: one rule for every kind of case (eval, protocol case, suite).

A case's *evidence* is built from its two sides' usable samples (`outcome_evidence`
for pass/fail-with-turn outcomes, `score_evidence` for scores, `suite_evidence` for a
suite's evals together); `decide` then adjusts the exact p-values of all cases of a
pull request together (a discrete step-down min-p procedure over the tests' exact
null laws, `multiplicity.discrete_holm`) and picks a tier:

1. `new` / `removed` when a side is missing. `inconclusive` when a side has fewer
   usable samples than `usable_minimum` (errored and budget-skipped samples are not
   evidence about the model); the decision's `cause` says why: `errors`, `budget`
   or `skipped`.
2. One usable sample per side: a *transition*, a fact about the two recorded answers
   and not a statistical claim: `broken`, `fixed`, `later-turn`, `earlier-turn`, or
   `unchanged`.
3. The head looks worse by a material effect (at least `observed_share` of the
   minimum effect: a pass-rate drop of `min_effect`, a turn-of-pass shift of
   `min_turn_shift`, a score drop of `min_score_effect`):
   - the base passes less often than `min_base_rate` → `unreliable-baseline`;
   - adjusted p ≤ `alpha` → `regression`;
   - raw p ≤ `likely_alpha` → `likely-regression` (a watch tier: not adjusted for
     multiplicity, so it fires on noise; not a recommended gate);
   - otherwise → `inconclusive`.
4. The head looks better by a material effect: adjusted p ≤ `alpha` → `improvement`,
   otherwise `inconclusive`.
5. Otherwise `unchanged`.

Premises of the bound. When both sides are sampled, every p-value is exact (P(p ≤ a) ≤ a
under "no change", given the pooled samples) when base and head samples are
exchangeable, so the family-wise false-alarm rate of `regression` is then at most
`alpha` by theorem; the action and `turncheck diff` keep them exchangeable under a
run-level drift by taking both sides' samples interleaved (`engine.runner.
run_both_sides`), while two reports run at different times carry no such guarantee.
Against a pooled base (`stats.pooled`) the p-values are predictive: calibrated on
average under a logit-normal run-level drift whose variance main's history (or, with
one stored run, the two sides) estimates; the bound there is approximate and measured
by `benchmarks/verdicts.py` (docs/statistics.md, "What each bound assumes").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from turncheck.stats.multiplicity import discrete_holm
from turncheck.stats.rates import usable_minimum
from turncheck.stats.tests import (
    ClusterScores,
    Outcome,
    ShiftTest,
    Stratum,
    clustered_permutation_test,
    fisher_worse,
    mean_outcome_shift,
    stratified_pass_test,
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
    BROKEN = "broken"
    """One sample per side: passed at base, not at head."""
    FIXED = "fixed"
    """One sample per side: passed at head, not at base."""
    LATER_TURN = "later-turn"
    """One sample per side: both passed, head on a later turn."""
    EARLIER_TURN = "earlier-turn"
    """One sample per side: both passed, head on an earlier turn."""


NO_TEST = ShiftTest(1.0, 1.0)



@dataclass(frozen=True)
class Unusable:
    """Samples of one side that say nothing about the model: they errored (provider
    down, bad key, timeout) or were not taken (a budget skipped them)."""

    errors: int = 0
    skipped: int = 0
    skip_reason: str = "skipped"
    """Why samples were skipped: `budget` for a budget stop."""


ALL_USABLE = Unusable()


def shortfall(usable: int, lost: Unusable) -> str | None:
    """`errors`, `budget` or `skipped` when a side has fewer usable samples than
    `usable_minimum`; None when it can be judged."""
    taken = usable + lost.errors + lost.skipped
    if taken and usable >= usable_minimum(taken):
        return None
    if lost.errors and lost.errors >= lost.skipped:
        return "errors"
    return lost.skip_reason if lost.skipped else "no samples"


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
    observed_share: float = 0.5
    """A change is material when its observed size reaches this share of the minimum
    effect. Below 1 so that a true change of the minimum effect is called with a
    probability that rises to 1 with the samples, rather than at most about half."""
    min_suite_effect: float = 0.1
    """Smallest mean pass-rate drop over a suite's evals that counts (suite-level test)."""

    def material(self, observed: float, minimum: float) -> bool:
        return observed >= minimum * self.observed_share - 1e-9


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
    """A side has fewer usable samples than `usable_minimum`: not tested."""
    cause: str | None = None
    """Why it is empty: `errors`, `budget`, `skipped`."""
    transition: Verdict | None = None
    """With one usable sample per side: broken / fixed / later-turn / earlier-turn."""
    pooled: bool = False
    """The test reuses other cases' samples (a suite-level test): not independent of
    them, so multiplicity treats it with the union bound."""
    pass_p_value: float | None = None
    """Fisher's exact one-sided p-value on pass counts alone (informational)."""
    rate_change: float | None = None
    """Head pass rate − base pass rate (or mean score change for scores)."""
    turn_shift: float | None = None
    """Mean turn-of-pass of head − base, over passing samples."""
    allowance: str | None = None
    """What the test allowed for besides sampling (the drift between separate runs), said
    when a change it shows stays inconclusive."""
    untested: str | None = None
    """What the test could not see (a stopped head's turn of pass), said likewise."""


def missing_evidence(base_present: bool) -> Evidence:
    return Evidence(present=False, missing=Verdict.REMOVED if base_present else Verdict.NEW)


def outcome_evidence(base: Sequence[Outcome], head: Sequence[Outcome],
                     settings: VerdictSettings = DEFAULT_SETTINGS, *,
                     base_lost: Unusable = ALL_USABLE, head_lost: Unusable = ALL_USABLE,
                     test: ShiftTest | None = None) -> Evidence:
    """Evidence from the usable pass/fail outcomes (the turn passed on, or None) of each
    side; `*_lost` count the samples that errored or were skipped; `test` the test to
    use instead of the exact turn-of-pass test (e.g. against a pooled base)."""
    cause = shortfall(len(head), head_lost) or shortfall(len(base), base_lost)
    if cause is not None:
        return Evidence(empty=True, cause=cause)
    base_passes = sum(t is not None for t in base)
    head_passes = sum(t is not None for t in head)
    base_rate, head_rate = base_passes / len(base), head_passes / len(head)
    shift = mean_outcome_shift(base, head)
    single = len(base) == 1 and len(head) == 1
    return Evidence(
        test=turn_shift_test(base, head) if test is None or single else test,
        worse_effect=settings.material(base_rate - head_rate, settings.min_effect)
        or settings.material(shift, settings.min_turn_shift),
        better_effect=settings.material(head_rate - base_rate, settings.min_effect)
        or settings.material(-shift, settings.min_turn_shift),
        base_unreliable=base_rate < settings.min_base_rate - 1e-9,
        single_samples=single,
        transition=outcome_transition(base[0], head[0]) if single else None,
        pass_p_value=fisher_worse(base_passes, len(base), head_passes, len(head)),
        rate_change=head_rate - base_rate,
        turn_shift=shift,
    )


def outcome_transition(base: Outcome, head: Outcome) -> Verdict | None:
    """What changed between two single samples; None when nothing did."""
    if base is not None and head is None:
        return Verdict.BROKEN
    if base is None and head is not None:
        return Verdict.FIXED
    if base is None or head is None or base == head:
        return None
    return Verdict.LATER_TURN if head > base else Verdict.EARLIER_TURN


def status_transition(base_passed: bool, head_passed: bool) -> Verdict | None:
    """broken / fixed between two single samples judged by pass only (protocol cases)."""
    if base_passed == head_passed:
        return None
    return Verdict.FIXED if head_passed else Verdict.BROKEN


def suite_evidence(strata: Sequence[tuple[Sequence[Outcome], Sequence[Outcome]]],
                   settings: VerdictSettings = DEFAULT_SETTINGS) -> Evidence:
    """Evidence that a suite's evals together pass less (more) often at head: the exact
    stratified (Cochran–Mantel–Haenszel) test over the evals' usable outcomes, one
    stratum per eval judged on both sides. The effect is the mean pass-rate change over
    those evals. Fewer than two strata: empty (the eval's own test says it all)."""
    usable = [(b, h) for b, h in strata if b and h]
    if len(usable) < 2:
        return Evidence(empty=True, cause="too few evals")
    counted = [Stratum(sum(t is not None for t in b), len(b),
                       sum(t is not None for t in h), len(h)) for b, h in usable]
    change = sum(s.head_passes / s.head_samples - s.base_passes / s.base_samples
                 for s in counted) / len(counted)
    return Evidence(
        test=stratified_pass_test(counted),
        pooled=True,
        worse_effect=settings.material(-change, settings.min_suite_effect),
        better_effect=settings.material(change, settings.min_suite_effect),
        rate_change=change,
    )


def score_evidence(base: ClusterScores, head: ClusterScores, base_unreliable: bool = False,
                   settings: VerdictSettings = DEFAULT_SETTINGS, *,
                   base_lost: Unusable = ALL_USABLE, head_lost: Unusable = ALL_USABLE,
                   transition: Verdict | None = None) -> Evidence:
    """Evidence from the usable scores: `base[c]`/`head[c]` are the sample scores of
    cluster c (one case has one cluster; a suite's aggregate has one per case); `*_lost`
    as for `outcome_evidence` (one case); `transition` what changed between single
    samples (see `status_transition`)."""
    cause = shortfall(sum(map(len, head)), head_lost) \
        or shortfall(sum(map(len, base)), base_lost)
    if cause is not None:
        return Evidence(empty=True, cause=cause)
    pairs = [(b, h) for b, h in zip(base, head, strict=True) if b and h]
    if not pairs:
        return Evidence(empty=True, cause="no samples")
    change = sum(sum(h) / len(h) - sum(b) / len(b) for b, h in pairs) / len(pairs)
    single = all(len(b) == 1 and len(h) == 1 for b, h in pairs)
    return Evidence(
        test=clustered_permutation_test([b for b, _ in pairs], [h for _, h in pairs]),
        worse_effect=settings.material(-change, settings.min_score_effect),
        better_effect=settings.material(change, settings.min_score_effect),
        base_unreliable=base_unreliable,
        single_samples=single,
        transition=transition if single else None,
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
    cause: str | None = None
    """Why an inconclusive row could not be judged: `errors`, `budget`, `skipped`."""
    p_raw: float | None = None
    """The unadjusted p-value of the row's own test (worse direction for regressions,
    likely regressions and unchanged rows; better for improvements)."""


def decide(evidence: Sequence[Evidence],
           settings: VerdictSettings = DEFAULT_SETTINGS) -> list[Decision]:
    """One decision per case, adjusting p-values across all of them (Holm, per direction)."""
    tested = [i for i, e in enumerate(evidence)
              if e.present and not e.empty and not e.single_samples]
    tests = [evidence[i].test for i in tested]
    alone = [not evidence[i].pooled for i in tested]
    worse = discrete_holm([t.worse for t in tests], [t.worse_null for t in tests],
                          [t.least_worse for t in tests], alone)
    better = discrete_holm([t.better for t in tests], [t.better_null for t in tests],
                           [t.least_better for t in tests], alone)
    adjusted = {i: (w, b) for i, w, b in zip(tested, worse, better, strict=True)}
    return [_decide_one(e, adjusted.get(i), settings) for i, e in enumerate(evidence)]


def _decide_one(evidence: Evidence, adjusted: tuple[float, float] | None,
                settings: VerdictSettings) -> Decision:
    if evidence.missing is not None:
        return Decision(evidence.missing, None, None, None, evidence.missing.value)
    if evidence.single_samples:
        verdict = evidence.transition or Verdict.UNCHANGED
        return Decision(verdict, None, None, None, "one sample per side: " + (
            verdict.value if evidence.transition else "no change"))
    if adjusted is None:
        return Decision(Verdict.INCONCLUSIVE, None, None, None, _shortfall_reason(evidence),
                        evidence.cause)
    worse, better = adjusted
    raw = evidence.test.worse

    def decision(verdict: Verdict, reason: str, p: float = worse,
                 p_raw: float = raw) -> Decision:
        return Decision(verdict, p, worse, better, reason, p_raw=p_raw)

    if evidence.worse_effect:
        if evidence.base_unreliable:
            return decision(Verdict.UNRELIABLE_BASELINE, "base passes too rarely to judge")
        if worse <= settings.alpha:
            return decision(Verdict.REGRESSION, f"worse, adjusted p ≤ {settings.alpha:g}")
        if raw <= settings.likely_alpha:
            return decision(Verdict.LIKELY_REGRESSION, f"worse, raw p ≤ {settings.likely_alpha:g}")
        return decision(Verdict.INCONCLUSIVE, _too_few("worse", evidence))
    if evidence.better_effect:
        if better <= settings.alpha:
            return decision(Verdict.IMPROVEMENT, f"better, adjusted p ≤ {settings.alpha:g}",
                            better, evidence.test.better)
        return decision(Verdict.INCONCLUSIVE, _too_few("better", evidence), better,
                        evidence.test.better)
    return decision(Verdict.UNCHANGED, "no change of at least the minimum effect")


def _too_few(direction: str, evidence: Evidence) -> str:
    """Why a material change stays inconclusive: too few samples, with what the test also
    allowed for."""
    allowed = f" with {evidence.allowance} allowed for" if evidence.allowance else ""
    untested = f"; {evidence.untested}" if evidence.untested else ""
    return f"{direction}, but too few samples to tell{allowed}{untested}"


def _shortfall_reason(evidence: Evidence) -> str:
    return {
        "errors": "too few usable samples: errors",
        "budget": "too few usable samples: a budget skipped them",
        "skipped": "too few usable samples: skipped",
    }.get(evidence.cause or "", "a side has no usable sample")
