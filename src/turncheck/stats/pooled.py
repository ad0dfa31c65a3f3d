"""A pooled base: the head against many earlier runs of the same base, drift included.

When the base side is the pooled samples of several trusted runs of the base commit
(`turncheck.compare.pool`), the base rate is well known and the head's question is
nearly one-sample: is the head's pass count unlikely for a *new run* of the base? A
new run is not just more samples: every run has its own level (another day, another
provider load), so the head run's pass chance is the base's rate moved by a run-level
drift on the logit scale, `logit p_run = logit p + sigma * Z`.

- `between_run_variance` estimates sigma² from main's history (each run's pass count
  per eval; a method-of-moments beta-binomial estimate pooled over the evals).
- `conditional_law` is the law of a head's passes given the eval's passes on both
  sides (and, for a two-stage `repeat: auto` head, the samples it took), under a
  shift s of the head run's pass chances on the logit scale: the head run's drift
  against the K base runs' average, s ~ N(0, sigma² (1 + 1/K)), mixed over s. Given
  those, the eval's pass rate cancels, so the law holds whatever it is (a predictive
  law, the Jeffreys posterior of the base's rate, is calibrated only on average over
  the rates). `two_stage_test` tests an `auto` head's pass rate by it, the suite test
  sums it over the evals, and `stats.turn_hazards` tests a fixed head turn by turn.

`repeat: auto` at head (the head sampled alone: `adaptive.more_samples`) is a two-stage
design: the first look, stopped when it all passed or all failed, else topped up. The
law is computed for that design given where it stopped, so the early stop does not
bias the test.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from turncheck.stats.tests import ShiftTest, _null_law

RunCounts = Sequence[tuple[int, int]]
"""(passes, usable samples) of one eval in each run."""


DRIFT_CEILING = 0.25
"""The largest drift variance a margin widens an estimate to (sigma = 0.5 on the logit
scale, the largest drift the false-alarm targets are set for): with few runs the margin
alone would otherwise exceed any drift seen, and an estimate above it is kept as is."""
MARGIN_LEVEL = 0.975


def run_margin(runs: int) -> float:
    """How much wider a drift variance estimated from `runs` runs is taken: the squared
    ratio of Student's t quantile on runs − 1 degrees of freedom to the normal's at
    `MARGIN_LEVEL` (a new run's shift, standardised by a variance estimated from the
    runs, is t-distributed). About 1.5 for 8 runs, 2 for 5, 42 for 2."""
    from scipy.stats import norm, t
    return float((t.ppf(MARGIN_LEVEL, max(1, runs - 1)) / norm.ppf(MARGIN_LEVEL)) ** 2)


def with_margin(estimate: float, noise: float, runs: int) -> float:
    """A drift variance `estimate` from `runs` runs whose shift estimates also carry
    sampling `noise` (variance), widened by `run_margin`: (estimate + noise) × margin −
    noise, at most `DRIFT_CEILING` unless the estimate itself is above it."""
    widened = (estimate + noise) * run_margin(runs) - noise
    return max(estimate, min(widened, DRIFT_CEILING))


def between_run_variance(history: Sequence[RunCounts], cautious: bool = False,
                         runs_margin: bool = False) -> float:
    """Estimated run-level drift variance sigma² (logit scale) from several runs' pass
    counts per eval (one `RunCounts` per eval). 0 without evidence of drift.

    For one eval with runs of n_k samples, x_k passes, pooled rate m and v = m(1-m):
    Var(x_k) = n_k v + n_k (n_k - 1) tau², tau² = sigma² v² the variance of a run's pass
    chance; the between-run sum of squares S = sum (x_k - n_k m)² has expectation
    sum (1 - n_k / N) (n_k v + n_k (n_k - 1) tau²). Pooled over evals (the drift is a
    property of the runs, shared by every eval) sigma² = sum (S - S_0) / sum c v², where
    S_0 is S's expectation without drift. Evals that always pass or always fail carry
    no information and are skipped.

    `cautious`: the estimate plus its standard error (from the spread of the evals'
    terms around it), so that a history that happens to look calm does not narrow the
    tests: what the tests are widened by. That error treats the evals as independent;
    a drift shared by a run's evals makes them move together, so `runs_margin` also
    widens the estimate by `with_margin` for the number of runs (what predicting a new
    run from K runs costs, whatever the number of evals)."""
    terms = _drift_terms(history)
    weight = sum(w for _, w in terms)
    if weight <= 0:
        return 0.0
    estimate = sum(e for e, _ in terms) / weight
    if not cautious:
        return max(0.0, estimate)
    found = cautious_estimate(terms)
    if runs_margin:
        runs = max(sum(n > 0 for _, n in eval_runs) for eval_runs in history)
        found = max(found, with_margin(max(0.0, estimate), 0.0, runs))
    return found


def cautious_estimate(terms: Sequence[tuple[float, float]]) -> float:
    """The estimate from evals' drift terms (S - S_0, c v²), cut at 0, plus its standard
    error from the terms' spread around it (`between_run_variance`'s `cautious`)."""
    weight = sum(w for _, w in terms)
    if weight <= 0:
        return 0.0
    estimate = sum(e for e, _ in terms) / weight
    error = math.sqrt(sum((e - estimate * w) ** 2 for e, w in terms)) / weight
    return max(0.0, estimate) + error


def _drift_terms(history: Sequence[RunCounts]) -> list[tuple[float, float]]:
    """(S - S_0, c v²) of every informative eval (see `between_run_variance`)."""
    return [term for runs in history if (term := drift_term(runs)) is not None]


def drift_term(runs: RunCounts) -> tuple[float, float] | None:
    """(S - S_0, c v²) of one eval (see `between_run_variance`); None when it carries no
    information (fewer than two runs with samples, or it always passed or failed)."""
    counted = [(x, n) for x, n in runs if n > 0]
    total = sum(n for _, n in counted)
    if len(counted) < 2 or total < 2:
        return None
    rate = sum(x for x, _ in counted) / total
    if rate <= 0.0 or rate >= 1.0:
        return None
    spread = rate * (1 - rate) * total / (total - 1)
    squares = sum((x - n * rate) ** 2 for x, n in counted)
    expected = sum((1 - n / total) * n * spread for _, n in counted)
    slope = sum((1 - n / total) * n * (n - 1) for _, n in counted)
    return squares - expected, slope * spread * spread


def shared_run_variance(history: Sequence[RunCounts], margin: bool = False) -> float:
    """The part of the drift variance shared by every eval of a run (logit scale), from
    several runs' pass counts per eval aligned by run (`history[i][k]`: eval i in run k;
    (0, 0) when the run lacks it). Each run's shift is estimated from all its evals at
    once, e_k = sum_i (x_ik - n_ik m_i) / W_k with W_k = sum_i n_ik m_i (1 - m_i) (the
    delta method), whose variance without a shared drift is about 1 / W_k; the estimate
    is the spread of the e_k beyond that, 0 when none. Each eval's own drift adds to the
    spread too, so it errs upwards. Fewer than two runs: 0. `margin`: widened for the
    number of runs it comes from (`with_margin`, the e_k's noise included)."""
    import numpy as np
    informative = []
    for runs in history:
        total = sum(n for _, n in runs)
        rate = sum(x for x, _ in runs) / total if total else 0.0
        if 0.0 < rate < 1.0:
            informative.append((runs, rate))
    width = max((len(runs) for runs, _ in informative), default=0)
    shifts, noise = [], []
    for run in range(width):
        counted = [(runs[run], rate) for runs, rate in informative if run < len(runs)]
        weight = sum(n * rate * (1 - rate) for (_, n), rate in counted)
        if weight > 0:
            shifts.append(sum(x - n * rate for (x, n), rate in counted) / weight)
            noise.append(1 / weight)
    if len(shifts) < 2:
        return 0.0
    estimate = max(0.0, float(np.var(shifts, ddof=1)) - float(np.mean(noise)))
    return with_margin(estimate, float(np.mean(noise)), len(shifts)) if margin else estimate


@dataclass(frozen=True)
class PooledBase:
    """One eval's pooled base: its passes and usable samples over `runs` runs."""

    passes: int
    samples: int
    runs: int


@dataclass(frozen=True)
class Design:
    """Every result a head design can give: result r has pass rate `rates[r]`, x_r =
    `passes[r]` passes of n_r = `samples[r]` samples taken, and `log_ways[r]` the log of
    the number of sample sequences the design turns into it."""

    rates: np.ndarray
    passes: np.ndarray
    samples: np.ndarray
    log_ways: np.ndarray


@functools.lru_cache(maxsize=256)
def design_of(looks: tuple[int, ...]) -> Design:
    """One look of `looks[0]` samples, or a first look that stops when it all passed or all
    failed and is otherwise topped up by `looks[1]` (`adaptive.more_samples`)."""
    import numpy as np
    from scipy.special import gammaln

    def log_comb(n: int, k: np.ndarray) -> np.ndarray:
        values: np.ndarray = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
        return values

    first = looks[0]
    if len(looks) == 1:
        passes = np.arange(first + 1)
        return Design(passes / first, passes, np.full(first + 1, first),
                      log_comb(first, passes))
    total = first + looks[1]
    mixed = np.arange(1, first)
    counts, log_ways = [0, first], [0.0, 0.0]
    for count in range(1, total):
        second = count - mixed
        valid = (second >= 0) & (second <= looks[1])
        if valid.any():
            ways = np.exp(log_comb(first, mixed[valid]) + log_comb(looks[1], second[valid]))
            counts.append(count)
            log_ways.append(math.log(float(ways.sum())))
    passes = np.asarray(counts)
    samples = np.asarray([first, first, *[total] * (len(counts) - 2)])
    return Design(passes / samples, passes, samples, np.asarray(log_ways))


def two_stage_test(base: PooledBase, variance: float, head_passes: int, head_samples: int,
                   looks: Sequence[int]) -> ShiftTest:
    """One-sided p-values for the head's pass rate (`head_passes` of `head_samples`, taken
    by the design `looks`, see `design_of`: a two-stage head that stopped after its first
    look has taken fewer than `sum(looks)`) against a new run of the pooled base, with
    the run-level drift `variance` (`between_run_variance`) of the head run against the
    K base runs' average, shift ~ N(0, variance (1 + 1/K)), mixed over it.

    The law is the design's conditional law given the eval's passes on both sides and
    the samples the head took (`conditional_law`): exact for any fixed pass rate
    when nothing changed, where a predictive law (the Jeffreys posterior of the base's
    rate) is calibrated only on average over the base rates and measured 6 % false
    regressions (issue 45, 20 evals at 0.5, per-eval drift σ = 0.5). The law is handed
    on as the test's null law (docs/statistics.md, "Against a pooled base")."""
    import numpy as np
    shifts, weights = shift_nodes(variance * (1 + 1 / max(1, base.runs)))
    head = PooledHead(head_passes, head_samples, tuple(looks))
    design = design_of(head.looks)
    chances = np.clip(weights @ conditional_law(base, head, shifts, 0.0), 0.0, None)
    taken = (design.samples == head_samples) & (chances > 0)
    return _rate_test(design.rates[taken], chances[taken], head_passes / head_samples)


def _rate_test(rates: np.ndarray, chances: np.ndarray, observed: float) -> ShiftTest:
    """One-sided p-values of the observed pass rate under the law (`rates`, `chances`):
    lower rates are worse; with the law's attainable p-values (its null law)."""
    chances = chances / chances.sum()
    worse = float(chances[rates <= observed + 1e-12].sum())
    better = float(chances[rates >= observed - 1e-12].sum())
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float(chances[rates == rates.min()].sum()),
                     least_better=float(chances[rates == rates.max()].sum()),
                     worse_null=_null_law(-rates, chances, worse=True),
                     better_null=_null_law(-rates, chances, worse=False))


# -- the suite against a pooled base --------------------------------------------------

SHIFT_NODES = 24
"""Gauss–Hermite nodes over the shared run-level shift of the suite-level test."""
GRID = 4
"""The suite-level statistic (a sum of passes minus expected passes) is counted in steps
of 1 / GRID pass."""


@dataclass(frozen=True)
class PooledHead:
    """One eval's head: passes of usable samples, taken by the design `looks`."""

    passes: int
    samples: int
    looks: tuple[int, ...]


def shift_nodes(variance: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of N(0, variance) (Gauss–Hermite); one node at 0 without drift."""
    import numpy as np
    from numpy.polynomial.hermite_e import hermegauss
    if variance <= 0:
        return np.zeros(1), np.ones(1)
    nodes, weights = hermegauss(SHIFT_NODES)
    return nodes * math.sqrt(variance), weights / weights.sum()


def pooled_suite_test(bases: Sequence[PooledBase], heads: Sequence[PooledHead],
                      variance: float, shared: float | None = None) -> ShiftTest:
    """One-sided test of "the suite's evals together pass less (more) often at
    head than a new run of the pooled base would".

    The statistic is the sum over the evals of the head's passes minus the passes its
    pooled rate of both sides predicts for the samples it took (x - n m: an eval topped
    up to 30 samples weighs more than one that stopped at its first look). Its law
    mixes, over one run-level shift s shared by every eval of the run (s ~ N(0, sigma²
    (1 + 1/K)): the head run's drift and the K base runs' average), each eval's
    conditional law given s (`conditional_law`), convolved over the evals (given s they
    are independent), counted in steps of 1 / GRID pass.

    `variance` is the drift variance of one eval (`between_run_variance`), `shared` the
    part of it every eval of a run shares (`shared_run_variance`); the rest is each
    eval's own and widens its law (`conditional_law`). Without
    `shared` all of it is taken as shared: the cautious choice, as a shared drift
    spreads the sum most.
    Fewer than two evals: no test (p = 1)."""
    import numpy as np
    if len(bases) < 2:
        return ShiftTest(1.0, 1.0, least_worse=1.0, least_better=1.0)
    runs = min(max(1, b.runs) for b in bases)
    common, own = split_drift(variance, shared)
    shifts, weights = shift_nodes(common * (1 + 1 / runs))
    own *= 1 + 1 / runs
    steps = [_deviation_steps(base, head) for base, head in zip(bases, heads, strict=True)]
    width = sum(int(found.max()) + 1 for found, _ in steps)
    placed_laws = []
    observed = 0
    for base, head, (found, seen) in zip(bases, heads, steps, strict=True):
        law = conditional_law(base, head, shifts, own)
        placed = np.zeros((len(shifts), int(found.max()) + 1))
        for column, index in enumerate(found):
            placed[:, index] += law[:, column]
        placed_laws.append(placed)
        observed += seen
    summed = _convolve_rows(placed_laws)
    mixed = np.zeros(width)
    mixed[:summed.shape[1]] = np.clip(weights @ summed, 0.0, None)
    mixed[mixed < 1e-15 * mixed.max()] = 0.0
    mixed /= mixed.sum()
    return _sum_test(mixed, observed)


def split_drift(variance: float, shared: float | None) -> tuple[float, float]:
    """(shared, own) drift variances of one eval's run. Without a separate estimate of
    the shared part all of it is taken as shared (it spreads the suite's sum most). A
    shared estimate above `variance` raises the total rather than being cut to it:
    runs of one sample per eval show a shared drift (`shared_run_variance`) but no
    eval's own (`between_run_variance` is 0 for them), and the total is not known to be
    smaller than the part."""
    if shared is None:
        return variance, 0.0
    return shared, max(0.0, variance - shared)


def conditional_law(base: PooledBase, head: PooledHead, shifts: np.ndarray, own: float
                    ) -> np.ndarray:
    """The probability of every result of the head's design (columns, `design_of`), given
    the eval's pooled passes t = X + x over both sides and the samples the head took,
    under each shared shift s (rows), mixed over the eval's own drift u ~ N(0, `own`).

    With pass chances moved on the logit scale, a result of x passes has probability
    ways(x) C(N, t − x) e^((s + u) x) up to a constant, whatever the eval's pass rate:
    Fisher's noncentral hypergeometric law for a fixed head. A two-stage head (stopped
    after a first look that all passed or all failed, else topped up) is conditioned on
    the samples it took as well: the pass rate cancels only between results of as many
    samples, and the stopping rule sees the head's first look alone, so the law holds
    for an unknown fixed rate, as the predictive law (a Jeffreys posterior of the base's
    rate) does not when the base has few samples. Results of another sample count get
    0. One sample per side: a discordant eval broke with chance expit(s + u), so an
    eval's own drift, symmetric, costs nothing there."""
    import numpy as np
    from scipy.special import gammaln
    design = design_of(head.looks)
    size = base.samples
    rest = base.passes + head.passes - design.passes
    valid = (rest >= 0) & (rest <= size) & (design.samples == head.samples)
    safe = np.clip(rest, 0, size)
    ways = np.where(valid, design.log_ways + gammaln(size + 1) - gammaln(safe + 1)
                    - gammaln(size - safe + 1), -np.inf)
    nodes, node_weights = shift_nodes(own)
    odds = shifts[:, None, None] + nodes[None, :, None]
    logs = ways[None, None, :] + odds * design.passes[None, None, :]
    logs = logs - logs.max(axis=2, keepdims=True)
    chances = np.exp(logs)
    chances /= chances.sum(axis=2, keepdims=True)
    mixed: np.ndarray = np.tensordot(node_weights, chances, axes=([0], [1]))
    return mixed


def _convolve_rows(laws: Sequence[np.ndarray]) -> np.ndarray:
    """Row by row, the convolution of every law in `laws` (each one row per shift): in
    pairs, so each is transformed at about its own length rather than the sum's."""
    from scipy.signal import fftconvolve
    found = list(laws)
    while len(found) > 1:
        paired = [fftconvolve(found[i], found[i + 1], axes=1)
                  for i in range(0, len(found) - 1, 2)]
        found = paired + found[len(paired) * 2:]
    return found[0]


def _deviation_steps(base: PooledBase, head: PooledHead) -> tuple[np.ndarray, int]:
    """Each result of the head's design as x - n m in steps of 1 / GRID, counted from the
    design's lowest (so from 0), and the observed result's step."""
    import numpy as np
    design = design_of(head.looks)
    mean = (base.passes + head.passes) / (base.samples + head.samples)
    values = np.rint((design.passes - design.samples * mean) * GRID).astype(int)
    low = int(values.min())
    seen = round((head.passes - head.samples * mean) * GRID)
    return values - low, min(max(seen - low, 0), int(values.max() - low))


def _sum_test(law: np.ndarray, observed: int) -> ShiftTest:
    """One-sided p-values of the observed sum under `law` (index = sum): a low sum is
    worse; with the law's attainable p-values."""
    import numpy as np
    possible = np.nonzero(law)[0]
    observed = min(max(observed, 0), len(law) - 1)
    return ShiftTest(float(min(1.0, law[: observed + 1].sum())),
                     float(min(1.0, law[observed:].sum())),
                     least_worse=float(law[possible[0]]), least_better=float(law[possible[-1]]),
                     worse_null=_null_law(-possible, law[possible], worse=True),
                     better_null=_null_law(-possible, law[possible], worse=False))
