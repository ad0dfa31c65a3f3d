"""Multiplicity control across all the comparisons of one pull request."""

from __future__ import annotations

from collections.abc import Sequence


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
