"""The suite-level test after `repeat: auto` with both sides sampled together: the sum
over a suite's evals of each eval's centered score sum, tested against a stochastic
upper (lower) bound of its law under "no change" that does not condition on where each
eval stopped.

Per eval, imagine every planned look of the joint design (`adaptive.joint_looks`) drawn
up front: pooled outcomes M_1..M_K and the head's share of each, X_1..X_K. Under "no
change" each X_k is a uniform split of M_k, independent across looks. Sampling stops at
a look tau that is a function of (M, X) up to tau. The statistic is T = S_tau - mu_tau:
the head's summed look scores (`adaptive.look_scores`) over the looks taken, less their
null mean (`adaptive.Moments.mean`). Given all of M, P(T >= t | M) is a valid p-value,
but M after the observed stop is never seen. The paths that stop at or before the
observed stop depend on the seen looks only and are enumerated exactly (the dynamic
program of `looks.sequential_law`, keeping the paths that stop at each look instead of
conditioning on one); the paths that would have gone on get a law above (below) every
law their unseen looks could give: the largest (smallest) partial sum of independent
increments, each look's increment at its largest value (`look_bound`), or, for an eval
whose samples can only pass or fail, drawn from the largest tail over every pooled
count of failures (`increment_bound`). That law lies stochastically above (below) the
true one given every look's pooled outcomes, so tail probabilities under it are at least
the exact ones: the p-values are conservative, P(p <= a) <= a under "no change".
Evals are independent given their pooled outcomes, so the suite's law is the convolution
of the evals' bounded laws. Values are put on a grid of `GRID` score units, rounded up
(down for "better") both in the law and in the observed value, which keeps the bound.

Unlike the test conditional on each eval's stopping look, the evidence of an eval's
first look is kept when the eval went on (conditioning on "it went on" would discard
exactly the evidence that made it go on).

Not used by `compare` (measured with benchmarks/verdicts.py, docs/statistics.md): the
bound on the unseen looks costs about what the later looks gain, so on a diffuse drop
it tests no better than the first looks alone.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from turncheck.stats.adaptive import SCORE_SCALE, Moments, joint_looks, look_scores
from turncheck.stats.looks import _goes_on, _sum_law
from turncheck.stats.tests import Outcome, ShiftTest

GRID = 8
"""Grid step of the suite law, in score units (`adaptive.SCORE_SCALE` is 64: a pass/fail
look moves the centered sum in steps of about 32)."""


def look_bound(size: int) -> float:
    """The largest centered score increment (head sum less its null mean) one look of
    `size` samples a side can give, over every pooled multiset and split.

    The increment is (head sum - base sum) / 2. Unrounded, the head's doubled mid-ranks
    sum to at most size(3 size + 1) (it holds the top half), the base's to at least
    size(size + 1), so the difference is at most 2 size^2 doubled ranks, SCORE_SCALE *
    size in score units; rounding each of the 2 size scores moves it by at most size."""
    return (SCORE_SCALE + 1) * size / 2


@dataclass(frozen=True)
class GridLaw:
    """A law on the integers offset, offset + 1, ...: chances[i] of offset + i."""

    offset: int
    chances: np.ndarray


@dataclass(frozen=True)
class EvalLaws:
    """One eval's bounded laws of its gridded centered score sum and its observed values:
    `worse` rounds up and puts unseen futures at their highest (for the "worse" tail),
    `better` rounds down and puts them at their lowest."""

    worse: GridLaw
    better: GridLaw
    observed_worse: int
    observed_better: int


def _mix(first: GridLaw, first_mass: float, second: GridLaw, second_mass: float) -> GridLaw:
    import numpy as np
    low = min(first.offset, second.offset)
    high = max(first.offset + len(first.chances), second.offset + len(second.chances))
    chances = np.zeros(high - low)
    chances[first.offset - low:first.offset - low + len(first.chances)] += \
        first_mass * first.chances
    chances[second.offset - low:second.offset - low + len(second.chances)] += \
        second_mass * second.chances
    return GridLaw(low, chances / chances.sum())


@functools.lru_cache(maxsize=256)
def increment_bound(size: int, up: bool, step: int) -> GridLaw:
    """A law above (below) one look's gridded centered increment whatever the look's
    pooled pass/fail outcomes: the largest survival (distribution) function over every
    pooled count of failures. Pass/fail only: ties of several turns give other laws."""
    import numpy as np
    tails = []
    low, high = 0, 0
    laws: list[GridLaw] = []
    for fails in range(2 * size + 1):
        pooled: list[Outcome] = [1] * (2 * size - fails) + [None] * fails
        base_scores, head_scores = look_scores(pooled[:size], pooled[size:])
        law = _sum_law([*base_scores, *head_scores], size)
        moments = Moments().add(base_scores, head_scores)
        possible = np.nonzero(law > 0)[0]
        grid = _grid_law(possible - moments.mean, law[possible], up, step)
        laws.append(grid)
        low, high = min(low, grid.offset), max(high, grid.offset + len(grid.chances))
    for grid in laws:
        dense = np.zeros(high - low)
        dense[grid.offset - low:grid.offset - low + len(grid.chances)] = grid.chances
        tails.append(np.cumsum(dense[::-1])[::-1] if up else np.cumsum(dense))
    bound = np.max(np.array(tails), axis=0)
    chances = bound - (np.append(bound[1:], 0.0) if up else np.insert(bound[:-1], 0, 0.0))
    return GridLaw(low, np.clip(chances, 0.0, None))


def _clamp(law: GridLaw, up: bool) -> GridLaw:
    """The law of max(0, X) (`up`) or min(0, X) of X with law `law`."""
    import numpy as np
    values = np.arange(law.offset, law.offset + len(law.chances))
    moved = np.maximum(values, 0) if up else np.minimum(values, 0)
    low = int(moved.min())
    chances: np.ndarray = np.bincount(moved - low, weights=law.chances)
    return GridLaw(low, chances)


@functools.lru_cache(maxsize=256)
def future_law(sizes: tuple[int, ...], up: bool, step: int, pass_fail: bool) -> GridLaw:
    """A law above (below) the sum of the centered increments of the looks of `sizes`
    a side that sampling goes on to, however it stops: the largest (smallest) partial
    sum of independent increments each above (below) its look's law
    (`increment_bound`), R_k = Y_k + max(0, R_k+1). Without `pass_fail`, each
    increment is put at its largest (smallest) value, `look_bound`."""
    import numpy as np
    rest: GridLaw | None = None
    for size in reversed(sizes):
        one = increment_bound(size, up, step) if pass_fail else \
            GridLaw(_cell(look_bound(size) if up else -look_bound(size), up, step), np.ones(1))
        if rest is None:
            rest = one
            continue
        clamped = _clamp(rest, up)
        rest = GridLaw(one.offset + clamped.offset, np.convolve(one.chances, clamped.chances))
    assert rest is not None
    return rest


def _grid_law(values: np.ndarray, chances: np.ndarray, up: bool, step: int) -> GridLaw:
    import numpy as np
    cells = _cells(values, up, step)
    low = int(cells.min())
    summed: np.ndarray = np.bincount(cells - low, weights=chances)
    return GridLaw(low, summed / summed.sum())


def _cells(values: np.ndarray, up: bool, step: int) -> np.ndarray:
    import numpy as np
    scaled = np.asarray(values, dtype=np.float64) / step
    cells: np.ndarray = (np.ceil(scaled - 1e-9) if up else np.floor(scaled + 1e-9)
                         ).astype(np.int64)
    return cells


def _cell(value: float, up: bool, step: int) -> int:
    return math.ceil(value / step - 1e-9) if up else math.floor(value / step + 1e-9)


def joint_eval_laws(base: Sequence[Sequence[Outcome]], head: Sequence[Sequence[Outcome]],
                    max_repeat: int, pass_fail: bool = False, step: int = GRID
                    ) -> EvalLaws | None:
    """The bounded laws of one eval sampled by the joint design (`base`/`head`: each
    side's outcomes per look; `pass_fail`: its samples can only pass on turn 1 or fail,
    whatever the unseen looks held, so `increment_bound`'s pass/fail law bounds them).
    None when the looks are not the design's (as `looks.sequential_law`)."""
    import numpy as np
    planned = joint_looks(max_repeat)
    sizes = [b - a for a, b in itertools.pairwise([0, *planned])]
    reached = len(head)
    if not reached or len(base) != reached or reached > len(sizes) or any(
            len(b) != size or len(h) != size
            for b, h, size in zip(base, head, sizes, strict=False)):
        return None
    values: list[np.ndarray] = []
    chances: list[np.ndarray] = []
    state, moments = np.ones(1), Moments()
    for index, (b, h) in enumerate(zip(base, head, strict=True)):
        base_scores, head_scores = look_scores(b, h)
        state = np.convolve(state, _sum_law([*base_scores, *head_scores], len(head_scores)))
        moments = moments.add(base_scores, head_scores)
        sums = np.arange(len(state))
        going = np.zeros(len(state), dtype=bool) if index == len(sizes) - 1 \
            else _goes_on(sums, moments, index)
        stopped = np.nonzero(~going & (state > 0))[0]
        values.append(stopped - moments.mean)
        chances.append(state[stopped])
        if index == reached - 1:
            on = np.nonzero(going & (state > 0))[0]
            rest_values = on - moments.mean
            observed = moments.head_sum
            if observed >= len(state) or going[observed] or state[observed] <= 0:
                return None  # sampling did not stop here by the design's rule
            stopped_values, stopped_chances = np.concatenate(values), np.concatenate(chances)
            laws = []
            for up in (True, False):
                stopped_law = _grid_law(stopped_values, stopped_chances, up, step)
                if not len(on):
                    laws.append(stopped_law)
                    continue
                going_law = _grid_law(rest_values, state[on], up, step)
                future = future_law(tuple(sizes[reached:]), up, step, pass_fail)
                laws.append(_mix(stopped_law, float(stopped_chances.sum()),
                                 GridLaw(going_law.offset + future.offset,
                                         np.convolve(going_law.chances, future.chances)),
                                 float(state[on].sum())))
            centered = observed - moments.mean
            return EvalLaws(laws[0], laws[1], _cell(centered, True, step),
                            _cell(centered, False, step))
        state = np.where(going, state, 0.0)
    return None


def look_laws(base: Sequence[Outcome], head: Sequence[Outcome], step: int = GRID
              ) -> EvalLaws | None:
    """The exact law of one look's centered score sum (a fixed `repeat`, or a first look
    whose size was fixed whatever the samples said), gridded both ways."""
    import numpy as np
    if not base or not head:
        return None
    base_scores, head_scores = look_scores(base, head)
    law = _sum_law([*base_scores, *head_scores], len(head_scores))
    moments = Moments().add(base_scores, head_scores)
    possible = np.nonzero(law > 0)[0]
    values = possible - moments.mean
    centered = moments.head_sum - moments.mean
    return EvalLaws(_grid_law(values, law[possible], True, step),
                    _grid_law(values, law[possible], False, step),
                    _cell(centered, True, step), _cell(centered, False, step))


def convolve_all(laws: Sequence[GridLaw]) -> GridLaw:
    """The law of the sum of independent gridded statistics."""
    import numpy as np
    from scipy.signal import fftconvolve
    offset = sum(law.offset for law in laws)
    spread = [law.chances for law in laws if len(law.chances) > 1]
    while len(spread) > 1:  # pairwise, so the long convolutions are few
        paired = []
        for first, second in itertools.zip_longest(spread[::2], spread[1::2]):
            if second is None:
                paired.append(first)
            elif min(len(first), len(second)) < 64:
                paired.append(np.convolve(first, second))
            else:
                paired.append(np.clip(fftconvolve(first, second), 0.0, None))
        spread = paired
    chances = spread[0] if spread else np.ones(1)
    return GridLaw(offset, chances / chances.sum())


def suite_sequential_test(laws: Sequence[EvalLaws]) -> ShiftTest:
    """One-sided p-values of the suite's summed gridded centered score sums against the
    convolution of the evals' bounded laws. Conservative (see the module docstring), so
    only P(p <= t) <= t is known of their null law: no attainable-value law is given to
    the multiplicity procedure."""
    if not laws:
        return ShiftTest(1.0, 1.0)
    worse = convolve_all([law.worse for law in laws])
    better = convolve_all([law.better for law in laws])
    high = sum(law.observed_worse for law in laws) - worse.offset
    low = sum(law.observed_better for law in laws) - better.offset
    p_worse = float(worse.chances[max(0, high):].sum()) if high < len(worse.chances) else 0.0
    p_better = float(better.chances[:low + 1].sum()) if low >= 0 else 0.0
    return ShiftTest(min(1.0, p_worse), min(1.0, p_better))
