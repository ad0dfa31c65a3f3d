"""How many samples per side an eval needs: the exact power of its pass/fail verdict.

An eval's verdict on pass/fail outcomes is Fisher's exact one-sided test, at the
level its family gives it, plus the materiality rule (an observed drop of at least
`observed_share` × `min_effect`). With `tests` evals in the family, Holm's first step
tests at α / tests: the power computed at that level is what a single changed eval
among `tests` steady ones gets at least (Holm only raises it, Tarone's screen too).
The power is summed exactly over every pair of pass counts, not approximated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from turncheck.stats.verdicts import DEFAULT_SETTINGS, VerdictSettings


def regression_power(base_rate: float, head_rate: float, samples: int, tests: int = 1,
                     settings: VerdictSettings = DEFAULT_SETTINGS) -> float:
    """Probability that an eval passing `base_rate` at base and `head_rate` at head,
    `samples` samples a side, is called `regression` in a family of `tests` evals."""
    import numpy as np
    from scipy.stats import binom, hypergeom
    counts = np.arange(samples + 1)
    base, head = np.meshgrid(counts, counts, indexing="ij")
    pooled = base + head
    # One-sided Fisher: P(head passes ≤ observed | pooled passes), hypergeometric.
    p_value = hypergeom.cdf(head, 2 * samples, pooled, samples)
    drop = (base - head) / samples
    material = drop >= settings.min_effect * settings.observed_share - 1e-9
    reliable = base / samples >= settings.min_base_rate - 1e-9
    called = (p_value <= settings.alpha / tests + 1e-12) & material & reliable
    chance = np.outer(binom.pmf(counts, samples, base_rate),
                      binom.pmf(counts, samples, head_rate))
    return float(chance[called].sum())


@dataclass(frozen=True)
class SampleSize:
    samples: int
    """Samples per side."""
    power: float
    """The power at that size."""


def samples_for_power(base_rate: float, head_rate: float, power: float = 0.8,
                      tests: int = 1, most: int = 200,
                      settings: VerdictSettings = DEFAULT_SETTINGS) -> SampleSize | None:
    """The fewest samples per side (up to `most`) whose power reaches `power`; None when
    even `most` do not."""
    for samples in range(1, most + 1):
        reached = regression_power(base_rate, head_rate, samples, tests, settings)
        if reached >= power:
            return SampleSize(samples, reached)
    return None
