"""The false-alarm guarantee of the verdicts, checked by enumeration, not by trusting
the null laws the tests report.

Under "base and head behave the same", every split of an eval's pooled samples into a
base and a head of the observed sizes is equally likely (conditionally on the pooled
samples). Enumerating the splits therefore gives the exact conditional chance of a
false alarm, independently of the laws `turn_shift_test` computes: these tests fail
if a p-value is anti-conservative (mid-p, a wrong law, ties mishandled) or if the
step-down spends more than α over a family (e.g. a suite-level test counted as
independent of the evals it reuses).
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from turncheck.stats.tests import Outcome, ShiftTest, Stratum, stratified_pass_test, turn_shift_test
from turncheck.stats.verdicts import Evidence, decide

Pooled = Sequence[Outcome]


def splits(pooled: Pooled, head_size: int) -> list[tuple[list[Outcome], list[Outcome]]]:
    """Every (base, head) split of the pooled samples, each equally likely under the null."""
    found = []
    for chosen in itertools.combinations(range(len(pooled)), head_size):
        picked = set(chosen)
        found.append(([o for i, o in enumerate(pooled) if i not in picked],
                      [pooled[i] for i in chosen]))
    return found


@functools.cache
def _test_of(base: tuple[Outcome, ...], head: tuple[Outcome, ...]) -> ShiftTest:
    """`turn_shift_test` of one split; the splits that pick equal samples in the same
    order (the pooled samples repeat) are tested once."""
    return turn_shift_test(base, head)


@pytest.mark.parametrize("pooled", [
    [1, 1, 1, 2, 2, 3, None, None, 1, 2, 3, None],   # 3 turns and failures, 6 vs 6
    [1] * 7 + [2, 3, None],                          # mostly turn 1 (a steady eval)
    [1, 2, 2, 3, 3, 3, None, None, None, None, 1],   # 5 vs 6, unequal sizes
])
def test_turn_of_pass_p_values_are_exact_over_every_split(pooled: Pooled) -> None:
    head_size = len(pooled) // 2 + len(pooled) % 2
    everything = splits(pooled, head_size)
    p_values = [_test_of(tuple(base), tuple(head)).worse for base, head in everything]
    law = dict(turn_shift_test(*everything[0]).worse_null)
    seen = Counter(round(p, 12) for p in p_values)
    # The reported null law is the enumerated one ...
    assert sorted(law) == pytest.approx(sorted(seen))
    for value, mass in law.items():
        assert seen[round(value, 12)] / len(everything) == pytest.approx(mass)
    # ... and every attainable threshold t has P(p ≤ t) ≤ t (here = t: the test is exact).
    for threshold in law:
        size = sum(p <= threshold + 1e-12 for p in p_values) / len(everything)
        assert size <= threshold + 1e-12


def test_turn_of_pass_null_size_at_twenty_samples_and_three_turns() -> None:
    """Realistic size (20 vs 20, 3 turns, an eval at 0.9 with the benchmark's per-turn
    chances): the unconditional P(p ≤ t) stays at most t (3 standard errors of margin
    over 800 fixed-seed draws)."""
    rng = np.random.default_rng(22)
    per_turn = 1.0 - (1.0 - 0.9) ** (1.0 / 3)
    draws = 800
    passed = rng.random((draws, 2, 20, 3)) < per_turn
    first = np.where(passed.any(axis=3), passed.argmax(axis=3) + 1, 0)
    p_values = np.array([turn_shift_test(*[[int(t) or None for t in side] for side in draw]).worse
                         for draw in first])
    for threshold in (0.01, 0.05, 0.2):
        size = float(np.mean(p_values <= threshold))
        margin = 3 * (threshold * (1 - threshold) / draws) ** 0.5
        assert size <= threshold + margin, (threshold, size)


FAMILY = (
    ((1, 1, 2, 3, None, None), 3),
    ((1, 2, 2, 3, 3, None), 3),
    ((1, 1, 1, 2, None, None), 3),
)
"""Three 3-turn evals, 3 samples a side: 20 splits each, 8,000 joint splits."""


@functools.cache
def _family_alarms() -> tuple[list[float], list[float]]:
    """Over every joint split of FAMILY (each equally likely when nothing changed): the
    smallest adjusted worse p-value `decide` gives (evals plus the suite-level
    stratified test), and the smallest raw p-value of the evals."""
    per_eval = [splits(pooled, head_size) for pooled, head_size in FAMILY]
    tests = [[_test_of(tuple(b), tuple(h)) for b, h in options] for options in per_eval]
    strata = [[Stratum(sum(o is not None for o in b), len(b), sum(o is not None for o in h),
                       len(h)) for b, h in options] for options in per_eval]
    adjusted, raw = [], []
    for choice in itertools.product(*[range(len(options)) for options in per_eval]):
        chosen = tuple(tests[e][c] for e, c in enumerate(choice))
        adjusted.append(_least_adjusted(chosen, tuple(strata[e][c] for e, c in
                                                      enumerate(choice))))
        raw.append(min(test.worse for test in chosen))
    return adjusted, raw


@functools.cache
def _suite_test(strata: tuple[Stratum, ...]) -> ShiftTest:
    return stratified_pass_test(strata)


@functools.cache
def _least_adjusted(tests: tuple[ShiftTest, ...], strata: tuple[Stratum, ...]) -> float:
    """The smallest adjusted worse p-value `decide` gives these evals and their suite-level
    test; joint splits with the same tests (many are) are decided once."""
    evidence = [*(Evidence(test=test) for test in tests),
                Evidence(test=_suite_test(strata), pooled=True)]
    return min(d.p_worse for d in decide(evidence) if d.p_worse is not None)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2, 0.3])
def test_the_step_down_with_a_suite_test_keeps_the_family_wise_rate_exactly(alpha: float
                                                                        ) -> None:
    adjusted, _ = _family_alarms()
    assert sum(p <= alpha + 1e-12 for p in adjusted) / len(adjusted) <= alpha + 1e-12


def test_the_enumeration_detects_a_family_that_spends_too_much() -> None:
    """The check above has teeth: the same enumeration shows the unadjusted family
    exceeding α, and the step-down rejecting at all (it is not vacuous)."""
    adjusted, raw = _family_alarms()
    assert sum(p <= 0.2 for p in raw) / len(raw) > 0.2
    assert any(p <= 0.2 for p in adjusted)


def test_a_test_without_a_law_enters_with_the_bound() -> None:
    # Sanity of the building block the enumeration relies on: an unknown law counts as
    # P(p ≤ t) = t above the least p, so a lone p of 0.04 stays significant at 5 %.
    lone = ShiftTest(0.04, 1.0, least_worse=0.01)
    assert decide([Evidence(test=lone)])[0].p_worse == pytest.approx(0.04)
