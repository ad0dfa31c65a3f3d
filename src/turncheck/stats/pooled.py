"""A pooled base: the head against many earlier runs of the same base, drift included.

When the base side is the pooled samples of several trusted runs of the base commit
(`turncheck.compare.pool`), the base rate is well known and the head's question is
nearly one-sample: is the head's pass count unlikely for a *new run* of the base? A
new run is not just more samples: every run has its own level (another day, another
provider load), so the head run's pass chance is the base's rate moved by a run-level
drift on the logit scale, `logit p_run = logit p + sigma * Z`.

- `between_run_variance` estimates sigma² from main's history (each run's pass count
  per eval; a method-of-moments beta-binomial estimate pooled over the evals).
- `predictive_test` is the test: the head's pass chance follows a Beta law with the
  pooled base's mean (Jeffreys posterior: (X + ½) / (N + 1)) whose variance adds the
  uncertainty of that mean (the posterior's, and the base runs' own drift averaged
  over K runs) to the head run's drift (delta method: sigma² (p(1-p))²). The head's
  passes then follow a beta-binomial law: the predictive null. Its p-value is the
  predictive probability of a result at least as bad (calibrated on average over
  the base's uncertainty, not exact given the true rate: `benchmarks/verdicts.py`
  measures the family-wise rate it gives).

`repeat: auto` at head (the head sampled alone: `adaptive.more_samples`) is a two-stage
design: the first look, stopped when it all passed or all failed, else topped up. The
law is computed for that design and results are ordered by pass rate, so the early
stop does not bias the test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from turncheck.stats.tests import ShiftTest

RunCounts = Sequence[tuple[int, int]]
"""(passes, usable samples) of one eval in each run."""


def between_run_variance(history: Sequence[RunCounts]) -> float:
    """Estimated run-level drift variance sigma² (logit scale) from several runs' pass
    counts per eval (one `RunCounts` per eval). 0 without evidence of drift.

    For one eval with runs of n_k samples, x_k passes, pooled rate m and v = m(1-m):
    Var(x_k) = n_k v + n_k (n_k - 1) tau², tau² = sigma² v² the variance of a run's pass
    chance; the between-run sum of squares S = sum (x_k - n_k m)² has expectation
    sum (1 - n_k / N) (n_k v + n_k (n_k - 1) tau²). Pooled over evals (the drift is a
    property of the runs, shared by every eval) sigma² = sum (S - S_0) / sum c v², where
    S_0 is S's expectation without drift. Evals that always pass or always fail carry
    no information and are skipped."""
    excess, weight = 0.0, 0.0
    for runs in history:
        counted = [(x, n) for x, n in runs if n > 0]
        total = sum(n for _, n in counted)
        if len(counted) < 2 or total < 2:
            continue
        rate = sum(x for x, _ in counted) / total
        if rate <= 0.0 or rate >= 1.0:
            continue
        spread = rate * (1 - rate) * total / (total - 1)
        squares = sum((x - n * rate) ** 2 for x, n in counted)
        expected = sum((1 - n / total) * n * spread for _, n in counted)
        slope = sum((1 - n / total) * n * (n - 1) for _, n in counted)
        excess += squares - expected
        weight += slope * spread * spread
    return max(0.0, excess / weight) if weight > 0 else 0.0


@dataclass(frozen=True)
class PooledBase:
    """One eval's pooled base: its passes and usable samples over `runs` runs."""

    passes: int
    samples: int
    runs: int


def head_chance_law(base: PooledBase, variance: float) -> tuple[float, float]:
    """(a, b) of the Beta law of a new run's pass chance (see the module docstring)."""
    mean = (base.passes + 0.5) / (base.samples + 1)
    spread = mean * (1 - mean)
    of_mean = spread / (base.samples + 2)
    drift = variance * spread * spread * (1 + 1 / max(1, base.runs))
    concentration = spread / (of_mean + drift) - 1
    return mean * concentration, (1 - mean) * concentration


def _log_comb(n: int, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln
    values: np.ndarray = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return values


def outcome_law(a: float, b: float, looks: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(pass rates, probabilities) of every result of the head's design under a
    Beta(a, b) pass chance: one look of `looks[0]` samples, or a first look that stops
    when it all passed or all failed and is otherwise topped up by `looks[1]`."""
    import numpy as np
    from scipy.special import betaln
    first = looks[0]
    if len(looks) == 1:
        passes = np.arange(first + 1)
        log_p = _log_comb(first, passes) + betaln(a + passes, b + first - passes) - betaln(a, b)
        return passes / first, np.exp(log_p)
    more = looks[1]
    total = first + more
    rates = [0.0, 1.0]
    chances = [math.exp(float(betaln(a, b + first) - betaln(a, b))),
               math.exp(float(betaln(a + first, b) - betaln(a, b)))]
    mixed = np.arange(1, first)
    for count in range(1, total):
        second = count - mixed
        valid = (second >= 0) & (second <= more)
        if not valid.any():
            continue
        ways = np.exp(_log_comb(first, mixed[valid]) + _log_comb(more, second[valid]))
        rates.append(count / total)
        chances.append(float(ways.sum()) * math.exp(float(betaln(a + count, b + total - count)
                                                           - betaln(a, b))))
    return np.asarray(rates), np.asarray(chances)


def predictive_test(base: PooledBase, variance: float, head_passes: int, head_samples: int,
                    looks: Sequence[int]) -> ShiftTest:
    """One-sided predictive p-values for the head's pass rate (`head_passes` of
    `head_samples`, taken by the design `looks`, see `outcome_law`: a two-stage head
    that stopped after its first look has taken fewer than `sum(looks)`) against a new
    run of the pooled base, with the run-level drift `variance`
    (`between_run_variance`)."""
    a, b = head_chance_law(base, variance)
    rates, chances = outcome_law(a, b, looks)
    chances = chances / chances.sum()
    observed = head_passes / head_samples
    worse = float(chances[rates <= observed + 1e-12].sum())
    better = float(chances[rates >= observed - 1e-12].sum())
    # No null law is handed on: it is the predictive law, not the law of the head given
    # the true rate, and the step-down procedure would trust its discreteness too much
    # (docs/statistics.md). The procedure then uses P(p <= t) <= t.
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float(chances[rates == rates.min()].sum()),
                     least_better=float(chances[rates == rates.max()].sum()))
