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
