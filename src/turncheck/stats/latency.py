"""Latency of two sides compared with its noise (`fail-on: latency`, docs/targets.md):
quantiles, and a one-sided Mann–Whitney test of "head is slower than base by more than
the threshold" over every turn of each side, never one sample against one.

The threshold is part of the test: base's latencies are scaled by (1 + threshold) and
the test asks whether head's still tend to be larger. Two runs of the same app differ in
every turn's latency; with no change, scaled base latencies are larger, so the test does
not fire, whatever the spread. The normal approximation with the tie correction and a
continuity correction is used; fewer than `MIN_TURNS` turns per side decide nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MIN_TURNS = 8
"""Turns each side needs before a latency change is decided."""
ALPHA = 0.01
"""A latency alarm needs p below this: one false alarm in a hundred unchanged runs."""


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile (linear between order statistics, as numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for index in order[start:end + 1]:
            ranks[index] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _ties(values: Sequence[float]) -> float:
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return sum(t ** 3 - t for t in counts.values())


def slower_p(base: Sequence[float], head: Sequence[float], threshold: float = 0.0) -> float:
    """One-sided p-value that `head` tends to exceed `base` × (1 + `threshold`)."""
    scaled = [value * (1 + threshold) for value in base]
    n1, n2 = len(scaled), len(head)
    if not n1 or not n2:
        return 1.0
    combined = [*scaled, *head]
    ranks = _ranks(combined)
    u_head = sum(ranks[n1:]) - n2 * (n2 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - _ties(combined) / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (u_head - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))
