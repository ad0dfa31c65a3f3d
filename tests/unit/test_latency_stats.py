"""The latency test of `fail-on: latency` (stats/latency.py): a one-sided Mann–Whitney
test of head against base scaled by the threshold, over all turns of each side."""

from __future__ import annotations

import random

from turncheck.stats.latency import ALPHA, quantile, slower_p


def noisy(rng: random.Random, centre: float, n: int = 30) -> list[float]:
    return [max(1.0, rng.gauss(centre, centre * 0.25)) for _ in range(n)]


def test_quantiles_are_linear_between_order_statistics() -> None:
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile([10, 20, 30, 40, 50], 0.95) == 48.0


def test_a_head_slower_than_the_threshold_allows_is_found_and_noise_is_not() -> None:
    rng = random.Random(7)
    base = noisy(rng, 1000)
    assert slower_p(base, noisy(rng, 1500), 0.2) < ALPHA
    # Unchanged: no alarm in 200 pairs of noisy runs at a 20% threshold.
    alarms = sum(slower_p(noisy(rng, 1000), noisy(rng, 1000), 0.2) < ALPHA for _ in range(200))
    assert alarms == 0
    # 10% slower is within a 20% threshold, though it is slower.
    assert slower_p(base, [v * 1.1 for v in base], 0.2) > ALPHA


def test_ties_and_empty_sides_give_no_alarm() -> None:
    assert slower_p([5.0] * 10, [5.0] * 10) == 1.0
    assert slower_p([], [1.0, 2.0]) == 1.0
