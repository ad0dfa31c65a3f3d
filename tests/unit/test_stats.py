"""The pure statistics behind verdicts, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from turncheck.stats.adaptive import more_samples
from turncheck.stats.agreement import (
    bootstrap_interval,
    cohen_kappa,
    confusion,
    within_one,
)
from turncheck.stats.multiplicity import holm, tarone_holm
from turncheck.stats.rates import summarize_passes, turn_distribution, wilson_interval
from turncheck.stats.tests import (
    clustered_permutation_test,
    fisher_better,
    fisher_worse,
    turn_shift_test,
)
from turncheck.stats.verdicts import (
    Evidence,
    Verdict,
    decide,
    missing_evidence,
    outcome_evidence,
    score_evidence,
)


def test_wilson_interval_matches_the_textbook_values() -> None:
    # 3 of 5: centre (0.6 + z²/10) / (1 + z²/5), z = 1.95996.
    low, high = wilson_interval(3, 5)
    assert (round(low, 4), round(high, 4)) == (0.2307, 0.8824)
    # Never degenerate at 0/n: Wald would say [0, 0].
    assert wilson_interval(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_rate_summary_has_pass_hat_n_pass_at_n_and_flakiness() -> None:
    summary = summarize_passes([True, False, True, True, False])
    assert (summary.passes, summary.samples, summary.rate) == (3, 5, 0.6)
    assert (summary.pass_all, summary.pass_any, summary.flaky) == (False, True, True)
    steady = summarize_passes([True, True])
    assert (steady.pass_all, steady.flaky) == (True, False)
    assert turn_distribution([2, None, 1, 2]) == {"1": 1, "2": 2, "fail": 1}


def test_fisher_one_sided_matches_the_hypergeometric_tail() -> None:
    # 9/10 vs 2/10: 11 passes of 20; P(base gets ≥ 9 of them) = (C(11,9)·9 + C(11,10)) / C(20,10).
    expected = (math.comb(11, 9) * 9 + math.comb(11, 10)) / math.comb(20, 10)
    assert fisher_worse(9, 10, 2, 10) == pytest.approx(expected)
    assert fisher_better(2, 10, 9, 10) == pytest.approx(expected)
    assert fisher_worse(1, 1, 0, 1) == pytest.approx(0.5)


def test_turn_shift_test_is_exact_for_tied_turns() -> None:
    # All pass: base on turn 1, head on turn 3. Only 1 of C(10,5) splits is as extreme;
    # the exact test counts it in full.
    shift = turn_shift_test([1] * 5, [3] * 5)
    assert shift.worse == pytest.approx(1 / 252)
    assert shift.better == pytest.approx(1.0)
    assert shift.least_worse == pytest.approx(1 / 252)
    # With pass/fail outcomes only it is Fisher's exact test.
    outcomes = turn_shift_test([1] * 9 + [None], [1] * 2 + [None] * 8)
    assert outcomes.worse == pytest.approx(fisher_worse(9, 10, 2, 10))
    assert math.comb(20, 10) > 0
    # Identical pooled samples can never be significant.
    assert turn_shift_test([1, 1], [1, 1]).least_worse == pytest.approx(1.0)


def test_holm_adjusts_step_down_and_keeps_order() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []
    assert holm([0.9, 0.3]) == pytest.approx([0.9, 0.6])


def test_tarone_leaves_tests_that_cannot_reach_significance_out_of_the_family() -> None:
    # Four tests; two can never go below 0.5 (e.g. identical samples): a family of two.
    adjusted = tarone_holm([0.02, 0.6, 1.0, 0.04], [0.001, 0.5, 1.0, 0.001], alpha=0.05)
    assert adjusted == pytest.approx([0.04, 1.0, 1.0, 0.04])
    # Plain Holm over all four would miss it.
    assert holm([0.02, 0.6, 1.0, 0.04])[0] == pytest.approx(0.08)


def _verdicts(*pairs: tuple[list[int | None], list[int | None]]) -> list[Verdict]:
    return [d.verdict for d in decide([outcome_evidence(b, h) for b, h in pairs])]


def test_a_large_drop_over_ten_samples_is_a_regression() -> None:
    base, head = [1] * 9 + [None], [1] * 2 + [None] * 8
    assert _verdicts((base, head)) == [Verdict.REGRESSION]


def test_a_one_sample_flip_is_never_a_regression() -> None:
    # One sample per side: transitions, symmetric, never a statistical tier.
    assert _verdicts(([1], [None])) == [Verdict.BROKEN]
    assert _verdicts(([1], [3])) == [Verdict.LATER_TURN]
    assert _verdicts(([None], [1])) == [Verdict.FIXED]
    assert _verdicts(([3], [1])) == [Verdict.EARLIER_TURN]
    assert _verdicts(([2], [2])) == [Verdict.UNCHANGED]


def test_a_turn_of_pass_shift_is_a_regression_at_equal_pass_counts() -> None:
    decision = decide([outcome_evidence([1] * 5, [3] * 5)])[0]
    assert decision.verdict is Verdict.REGRESSION
    assert decision.p_value == pytest.approx(1 / 252)


def test_multiplicity_makes_a_borderline_drop_likely_not_proven() -> None:
    # 8/10 → 2/10: p ≈ 0.006 alone is a regression; among 20 evals that could each be
    # significant (flaky on both sides), Holm multiplies it by 20.
    drop = ([1] * 8 + [None] * 2, [1] * 2 + [None] * 8)
    assert _verdicts(drop) == [Verdict.REGRESSION]
    flaky: tuple[list[int | None], list[int | None]] = ([1, None] * 5, [1, None] * 5)
    verdicts = _verdicts(drop, *[flaky] * 19)
    assert verdicts[0] is Verdict.LIKELY_REGRESSION
    assert set(verdicts[1:]) == {Verdict.UNCHANGED}
    # Evals that pass every sample on both sides cannot be significant: not counted.
    steady: tuple[list[int | None], list[int | None]] = ([1] * 10, [1] * 10)
    assert _verdicts(drop, *[steady] * 19)[0] is Verdict.REGRESSION


def test_an_unreliable_base_is_not_judged() -> None:
    assert _verdicts(([1, 1, None, None, None], [None] * 5)) == [Verdict.UNRELIABLE_BASELINE]


def test_improvements_new_and_removed() -> None:
    evidence = [outcome_evidence([None] * 10, [1] * 10), missing_evidence(base_present=False),
                missing_evidence(base_present=True), Evidence(empty=True)]
    assert [d.verdict for d in decide(evidence)] == [
        Verdict.IMPROVEMENT, Verdict.NEW, Verdict.REMOVED, Verdict.INCONCLUSIVE]


def test_clustered_permutation_test_shuffles_within_cases_only() -> None:
    # Two cases, 2 samples per side: 6 splits each, 36 in all; head lower in both.
    result = clustered_permutation_test([[3, 3], [1, 1]], [[0, 0], [-2, -2]])
    assert result.worse == pytest.approx(1 / 36)
    evidence = score_evidence([[3, 3], [1, 1]], [[0, 0], [-2, -2]])
    assert evidence.worse_effect and evidence.rate_change == pytest.approx(-3.0)


def test_adaptive_sampling_stops_steady_evals_and_tops_up_flaky_ones() -> None:
    assert more_samples([], 20) == 10
    assert more_samples([1] * 10, 20) == 0
    assert more_samples([None] * 10, 20) == 0
    assert more_samples([1, 1, 2] + [1] * 7, 20) == 10
    assert more_samples([1] * 3 + [None] * 17, 20) == 0
    assert more_samples([], 3) == 3


LABELS = [2, 2, -2, -2]
SCORES = [2, 1, -2, -2]


def test_kappa_and_weighted_kappa_by_hand() -> None:
    # p_o = 3/4; p_e = 0.5·0.25 + 0.5·0.5 = 0.375 → κ = 0.375 / 0.625.
    assert cohen_kappa(LABELS, SCORES) == pytest.approx(0.6)
    # Quadratic weights: κ_w = 1 − mean d² / expected d² = 1 − 0.25 / 7.25.
    assert cohen_kappa(LABELS, SCORES, weighted=True) == pytest.approx(1 - 1 / 29)
    assert within_one(LABELS, SCORES) == 1.0
    matrix = confusion(LABELS, SCORES, threshold=2)
    assert (matrix.true_positive, matrix.false_negative) == (1, 1)
    assert (matrix.false_positive, matrix.true_negative) == (0, 2)
    assert (matrix.tpr, matrix.tnr) == (0.5, 1.0)


def test_kappa_bootstrap_interval_holds_the_estimate_and_is_reproducible() -> None:
    labels = [3, 2, 1, 0, -1, -2, -3, 2, 1, 0]
    scores = [3, 1, 1, 0, -2, -2, -3, 3, 0, 0]
    kappa = cohen_kappa(labels, scores, weighted=True)
    interval = bootstrap_interval(labels, scores, weighted=True)
    assert kappa is not None and interval is not None
    assert interval[0] <= kappa <= interval[1] <= 1.0
    assert interval == bootstrap_interval(labels, scores, weighted=True)


def test_twenty_flaky_evals_with_the_same_pass_rates_raise_no_regression() -> None:
    import random

    rng = random.Random(7)
    rates = [0.3 + 0.03 * i for i in range(20)]
    for _ in range(20):  # twenty simulated PRs, base and head drawn alike
        pairs = [([1 if rng.random() < p else None for _ in range(10)],
                  [1 if rng.random() < p else None for _ in range(10)]) for p in rates]
        assert Verdict.REGRESSION not in _verdicts(*pairs)
    identical = [([1, None, 2, 1, None], [1, None, 2, 1, None])] * 20
    assert set(_verdicts(*identical)) == {Verdict.UNCHANGED}
