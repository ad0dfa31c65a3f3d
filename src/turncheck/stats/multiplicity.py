"""Multiplicity control across all the comparisons of one pull request."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values, in input order.

    Rejecting every hypothesis whose adjusted p-value is ≤ α keeps the
    family-wise error rate (any false alarm at all) at most α, under any
    dependence between the tests."""
    count = len(p_values)
    order = sorted(range(count), key=lambda i: p_values[i])
    adjusted = [1.0] * count
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def tarone_holm(p_values: Sequence[float], least: Sequence[float], alpha: float) -> list[float]:
    """Holm adjusted p-values over only the tests that can reach significance at all.

    An exact test on few or identical samples has a smallest achievable p-value
    (for example 1 when every pooled sample is the same, 0.5 with one sample per
    side). Tarone (1990): with K the smallest number such that at most K tests can
    reach α/K, tests that cannot reach α/K are left out of the family (adjusted
    p-value 1). The family depends only on the pooled samples, not on how they
    split between base and head, so the family-wise error rate stays at most α.
    Holm's step-down then runs over the remaining family."""
    count = len(p_values)
    family: list[int] = []
    for size in range(1, count + 1):
        family = [i for i in range(count) if least[i] <= alpha / size + 1e-12]
        if len(family) <= size:
            break
    adjusted = [1.0] * count
    for index, value in zip(family, holm([p_values[i] for i in family]), strict=True):
        adjusted[index] = value
    return adjusted


NullLaw = Sequence[tuple[float, float]]
"""(attainable p-value, its probability under the null) of one exact discrete test."""


def null_cdf(law: NullLaw, least: float, threshold: float) -> float:
    """P(p ≤ threshold) under the null: from the test's law when known, else the bound
    every exact test meets (0 below its least attainable p-value, else threshold)."""
    if law:
        return min(1.0, sum(mass for value, mass in law if value <= threshold + 1e-12))
    return 0.0 if threshold + 1e-12 < least else min(1.0, threshold)


def discrete_holm(p_values: Sequence[float], laws: Sequence[NullLaw],
                  least: Sequence[float], independent: Sequence[bool]) -> list[float]:
    """Step-down min-p adjusted p-values for exact discrete tests (Westfall & Young 1993,
    with the tests' exact null laws instead of resampling; Gilbert 2005; Tarone 1990).

    At each step the adjusted p-value of the smallest remaining p is a bound on the
    probability that *any* remaining test reaches it when all remaining nulls hold:
    1 − Π(1 − F_j(p)) over the remaining `independent` tests (each eval's samples are
    independent of every other eval's, and each test is conditional on its own pooled
    samples) plus Σ F_j(p) over the others (the suite-level tests, which share data
    with the evals: the union bound holds under any dependence). F_j(t) = P(p_j ≤ t)
    is the test's exact null law (`null_cdf`). The bound is monotone in the set, so
    the step-down is a closed testing procedure: rejecting every test with adjusted
    p ≤ α keeps the family-wise error rate at most α (strong control). It is never
    larger than Tarone–Holm's, since F_j(t) ≤ t and F_j(t) = 0 below the least p."""
    count = len(p_values)
    cdfs = [_Cdf(laws[i], least[i]) for i in range(count)]
    order = sorted(range(count), key=lambda i: p_values[i])
    adjusted = [1.0] * count
    running = 0.0
    for rank, index in enumerate(order):
        threshold = p_values[index]
        survive, union = 1.0, 0.0
        for j in order[rank:]:
            chance = cdfs[j](threshold)
            if not chance:
                continue
            if independent[j]:
                survive *= 1.0 - chance
            else:
                union += chance
        running = max(running, min(1.0, 1.0 - survive + union))
        adjusted[index] = running
        if running >= 1.0:
            break  # every later one is 1 too, as initialised
    return adjusted


class _Cdf:
    """`null_cdf` of one test, with its law sorted once."""

    def __init__(self, law: NullLaw, least: float) -> None:
        ordered = sorted(law)
        self.values = [value for value, _ in ordered]
        self.cumulative = list(accumulate(mass for _, mass in ordered))
        self.least = least

    def __call__(self, threshold: float) -> float:
        if not self.values:
            return null_cdf((), self.least, threshold)
        found = bisect_right(self.values, threshold + 1e-12)
        return 0.0 if found == 0 else min(1.0, self.cumulative[found - 1])
