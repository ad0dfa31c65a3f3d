"""The turn of pass of one eval against a base sampled in another run, drift allowed for.

Against a pooled base, or between two separately run reports, the samples of the two
sides are not exchangeable (each run has its own level), so the exact rank test of
`stats.tests` does not apply, and a test on pass counts alone cannot see an eval that
still passes, but turns later. This test compares the sides **turn by turn**: at turn
j, the samples still at risk (not passed on an earlier turn) pass on j or go on. Given
how many of them passed on j on both sides together, head's share follows the
hypergeometric law when nothing changed, whatever the eval's chance of passing on j,
and Fisher's noncentral hypergeometric law with odds ratio e^s when the head run's
chances are moved by s on the logit scale (`stats.pooled.conditional_law`). The
statistic sums, over the turns, head's passes on j minus their expectation given the
samples at risk (the log-rank statistic, Mantel 1966); its law convolves the turns'
laws given their samples at risk and mixes them over the run's drift s ~ N(0,
`variance`). Passing later lowers head's passes on the early turns among samples still
at risk: 12 of 12 passing on turn 1 at base and 12 of 12 on turn 3 at head give p of
about 1 / C(24, 12) without drift. With one turn it is the conditional pass-count test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from turncheck.stats.pooled import (
    GRID,
    PooledBase,
    PooledHead,
    _convolve_rows,
    _sum_test,
    conditional_law,
    shift_nodes,
)
from turncheck.stats.tests import Outcome, ShiftTest

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class TurnStratum:
    """One turn: the samples of each side still at risk on it, and those that passed on it."""

    base_at_risk: int
    base_passed: int
    head_at_risk: int
    head_passed: int

    @property
    def informative(self) -> bool:
        passed = self.base_passed + self.head_passed
        return min(self.base_at_risk, self.head_at_risk) > 0 \
            and 0 < passed < self.base_at_risk + self.head_at_risk


def turn_strata(base: Sequence[Outcome], head: Sequence[Outcome]) -> list[TurnStratum]:
    """The informative turns (both sides have samples at risk, and some but not all of
    them passed on it)."""
    last = max((t for t in [*base, *head] if t is not None), default=0)
    found = []
    for turn in range(1, last + 1):
        stratum = TurnStratum(
            sum(o is None or o >= turn for o in base), sum(o == turn for o in base),
            sum(o is None or o >= turn for o in head), sum(o == turn for o in head))
        if stratum.informative:
            found.append(stratum)
    return found


def drifting_turn_test(base: Sequence[Outcome], head: Sequence[Outcome], variance: float
                       ) -> ShiftTest:
    """One-sided p-values for "head passes later or less often (earlier or more often)
    than base" with the head run's drift against the base ~ N(0, `variance`) on the
    logit scale (see the module docstring); with the law's attainable p-values."""
    import numpy as np
    strata = turn_strata(base, head)
    if not strata:
        return ShiftTest(1.0, 1.0, least_worse=1.0, least_better=1.0)
    shifts, weights = shift_nodes(variance)
    placed, observed = [], 0
    for stratum in strata:
        rows, seen = _placed_turn(stratum, shifts)
        placed.append(rows)
        observed += seen
    mixed = np.clip(weights @ _convolve_rows(placed), 0.0, None)
    mixed[mixed < 1e-15 * mixed.max()] = 0.0
    return _sum_test(mixed / mixed.sum(), observed)


def _placed_turn(stratum: TurnStratum, shifts: np.ndarray) -> tuple[np.ndarray, int]:
    """The turn's law of head's passes minus their expectation, in steps of 1 / GRID from
    its lowest value (rows: shifts), and the observed step."""
    import numpy as np
    at_risk = stratum.head_at_risk
    law = conditional_law(PooledBase(stratum.base_passed, stratum.base_at_risk, 1),
                          PooledHead(stratum.head_passed, at_risk, (at_risk,)), shifts, 0.0)
    expected = at_risk * (stratum.base_passed + stratum.head_passed) \
        / (stratum.base_at_risk + at_risk)
    values = np.rint((np.arange(at_risk + 1) - expected) * GRID).astype(int)
    low = int(values.min())
    placed = np.zeros((len(shifts), int(values.max()) - low + 1))
    for column, index in enumerate(values - low):
        placed[:, index] += law[:, column]
    return placed, round((stratum.head_passed - expected) * GRID) - low
