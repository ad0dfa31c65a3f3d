"""Exact one-sided tests for base-vs-head samples.

A sample's *outcome* is the turn it passed on, or None when it did not pass.
For the turn-of-pass test a failure ranks after every turn, so "passes one turn
later" and "stops passing" both move the head's outcomes to the worse end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

Outcome = int | None


def fisher_worse(base_passes: int, base_samples: int,
                 head_passes: int, head_samples: int) -> float:
    """One-sided Fisher's exact p-value for "head passes less often than base"."""
    from scipy.stats import fisher_exact
    if base_samples == 0 or head_samples == 0:
        return 1.0
    table = [[base_passes, base_samples - base_passes],
             [head_passes, head_samples - head_passes]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def fisher_better(base_passes: int, base_samples: int,
                  head_passes: int, head_samples: int) -> float:
    """One-sided Fisher's exact p-value for "head passes more often than base"."""
    return fisher_worse(head_passes, head_samples, base_passes, base_samples)


def outcome_ranks(base: Sequence[Outcome], head: Sequence[Outcome]) -> tuple[list[int], int]:
    """Doubled mid-ranks (integers) of head's outcomes in the pooled samples, and
    the number of pooled samples; a failure ranks after every passing turn."""
    from scipy.stats import rankdata
    last = max([t for t in [*base, *head] if t is not None], default=0)
    pooled = [last + 1 if t is None else t for t in [*base, *head]]
    ranks = [round(float(2 * r)) for r in rankdata(pooled)]
    return ranks, len(pooled)


def _rank_sum_distribution(ranks: Sequence[int], chosen: int) -> np.ndarray:
    """counts[s]: how many `chosen`-element subsets of `ranks` sum to s (exact)."""
    import numpy as np
    total = sum(ranks)
    counts = np.zeros((chosen + 1, total + 1), dtype=np.float64)
    counts[0, 0] = 1.0
    for rank in ranks:
        # Larger subset sizes first, so each rank is used at most once.
        counts[1:, rank:] += counts[:-1, : total + 1 - rank].copy()
    row: np.ndarray = counts[chosen]
    return row


@dataclass(frozen=True)
class ShiftTest:
    worse: float
    """p-value for "head's outcomes are later (worse) than base's"."""
    better: float
    """p-value for "head's outcomes are earlier (better) than base's"."""
    least_worse: float = 0.0
    """Smallest `worse` p-value these pooled samples could give at all (any split)."""
    least_better: float = 0.0
    worse_null: tuple[tuple[float, float], ...] = ()
    """Every `worse` p-value these pooled samples can give, with its probability under
    "no change" (the test's exact null law); empty when unknown. Lets the multiplicity
    procedure use P(p ≤ t) itself rather than its bound t (`discrete_holm`)."""
    better_null: tuple[tuple[float, float], ...] = ()


def turn_shift_test(base: Sequence[Outcome], head: Sequence[Outcome]) -> ShiftTest:
    """Exact one-sided permutation tests of the Wilcoxon–Mann–Whitney rank sum.

    Under "base and head behave the same", every way of splitting the pooled
    samples into groups of the two sizes is equally likely; the p-value counts
    the splits whose head rank sum is at least (at most) the observed one. Ties
    (many samples passing on the same turn) get mid-ranks, and the distribution
    is computed exactly for those tied ranks, so it stays exact for small samples.
    With pass/fail outcomes only, this is Fisher's exact test.

    The p-values are exact (the probability of the observed rank sum counts in
    full), so P(p ≤ α) ≤ α holds for every α under "no change", conditionally on the
    pooled samples: the property Tarone's screen and Holm's step-down need for their
    family-wise guarantee to be a theorem (docs/statistics.md)."""
    import numpy as np
    if not base or not head:
        return ShiftTest(1.0, 1.0)
    ranks, _ = outcome_ranks(base, head)
    head_ranks = ranks[len(base):]
    observed = sum(head_ranks)
    law = _category_law(ranks, len(head_ranks))
    if law is None:
        counts = _rank_sum_distribution(ranks, len(head_ranks))
        possible = np.nonzero(counts)[0]
        law = (possible, counts[possible] / counts.sum())
    sums, chances = law
    worse = float(chances[sums >= observed].sum())
    better = float(chances[sums <= observed].sum())
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float(chances[sums == sums.max()].sum()),
                     least_better=float(chances[sums == sums.min()].sum()),
                     worse_null=_null_law(sums, chances, worse=True),
                     better_null=_null_law(sums, chances, worse=False))


def _null_law(sums: np.ndarray, chances: np.ndarray, worse: bool
              ) -> tuple[tuple[float, float], ...]:
    """(p-value, probability) of every attainable value of a one-sided test whose
    statistic has the law (`sums`, `chances`): large sums are worse."""
    import numpy as np
    values, inverse = np.unique(np.asarray(sums), return_inverse=True)
    mass = np.bincount(inverse.ravel(), weights=np.asarray(chances, dtype=np.float64).ravel(),
                       minlength=len(values))
    tails = np.cumsum(mass[::-1])[::-1] if worse else np.cumsum(mass)
    return tuple(zip(np.minimum(tails, 1.0).tolist(), mass.tolist(), strict=True))


MAX_CATEGORY_SPLITS = 2_000_000


def _category_law(ranks: Sequence[int], chosen: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The head rank sum's exact law when outcomes fall into few tied categories (a few
    turns and "fail"): head's count per category is multivariate hypergeometric, so the
    law is enumerated over those counts — fast where the subset-sum recursion is
    quadratic in the samples. None when there are too many count vectors."""
    import numpy as np
    from scipy.special import gammaln

    values, sizes = np.unique(np.asarray(ranks), return_counts=True)
    order = np.argsort(sizes)  # the largest category is implied by the others
    values, sizes = values[order], sizes[order]
    if np.prod(sizes[:-1] + 1.0) > MAX_CATEGORY_SPLITS:
        return None
    grids = np.meshgrid(*[np.arange(m + 1) for m in sizes[:-1]], indexing="ij")
    picked = [g.ravel() for g in grids] if grids else []
    rest = chosen - (sum(picked) if picked else 0)
    valid = (rest >= 0) & (rest <= sizes[-1])
    counts = [p[valid] for p in picked] + [np.broadcast_to(rest, valid.shape)[valid]]

    def log_comb(n: float, k: np.ndarray) -> np.ndarray:
        result: np.ndarray = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
        return result

    log_weight = sum(log_comb(float(m), x) for m, x in zip(sizes, counts, strict=True))
    chances = np.exp(log_weight - log_comb(float(sizes.sum()), np.asarray(chosen)))
    sums = sum(x * int(v) for v, x in zip(values, counts, strict=True))
    return np.asarray(sums), np.asarray(chances)


def mean_outcome_shift(base: Sequence[Outcome], head: Sequence[Outcome]) -> float:
    """Mean turn-of-pass of head minus base over passing samples (0 when a side has none)."""
    base_turns = [t for t in base if t is not None]
    head_turns = [t for t in head if t is not None]
    if not base_turns or not head_turns:
        return 0.0
    return sum(head_turns) / len(head_turns) - sum(base_turns) / len(base_turns)


ClusterScores = Sequence[Sequence[float]]
MAX_EXACT_SPLITS = 20_000


def clustered_permutation_test(
    base: ClusterScores, head: ClusterScores, resamples: int = 9_999, seed: int = 12345
) -> ShiftTest:
    """One-sided p-values for the head's mean score being lower (`worse`) or higher
    (`better`) than base's, clustered by case.

    `base[c]`/`head[c]` are the scores of one case's samples on each side. Under "no
    change" the side labels of a case's samples are exchangeable within that case,
    so samples are only shuffled within their own case (never across cases, whose
    levels differ). The statistic is the difference of the mean of the case means.
    Exact when the number of splits is small, otherwise a seeded Monte Carlo
    estimate with the (count + 1) / (resamples + 1) correction.

    `least_worse`/`least_better` (for Tarone's rule) depend on the pooled samples only:
    1 when no split can change the statistic (every case's samples score alike), else
    the smallest p-value any split gives (exact), or 1 / (resamples + 1)."""
    import numpy as np
    cases = [(list(b), list(h)) for b, h in zip(base, head, strict=True) if b and h]
    if not cases:
        return ShiftTest(1.0, 1.0)
    observed = _clustered_statistic(cases)
    splits = 1
    for b, h in cases:
        splits *= _n_choose(len(b) + len(h), len(h))
    draws = _exact_draws(cases) if splits <= MAX_EXACT_SPLITS else None
    if draws is not None:
        values = np.array([_clustered_statistic(d) for d in draws])
        return ShiftTest(float(np.mean(values <= observed + 1e-12)),
                         float(np.mean(values >= observed - 1e-12)),
                         least_worse=float(np.mean(values <= values.min() + 1e-12)),
                         least_better=float(np.mean(values >= values.max() - 1e-12)))
    values = _random_statistics(cases, resamples, np.random.default_rng(seed))
    worse = (np.sum(values <= observed + 1e-12) + 1) / (resamples + 1)
    better = (np.sum(values >= observed - 1e-12) + 1) / (resamples + 1)
    least = 1.0 if all(len(set([*b, *h])) == 1 for b, h in cases) else 1 / (resamples + 1)
    return ShiftTest(float(worse), float(better), least_worse=least, least_better=least)


def _n_choose(n: int, k: int) -> int:
    from math import comb
    return comb(n, k)


def _clustered_statistic(cases: Sequence[tuple[list[float], list[float]]]) -> float:
    import numpy as np
    return float(np.mean([np.mean(h) - np.mean(b) for b, h in cases]))


def _exact_draws(cases: list[tuple[list[float], list[float]]]
                 ) -> list[list[tuple[list[float], list[float]]]]:
    draws: list[list[tuple[list[float], list[float]]]] = [[]]
    for b, h in cases:
        pooled = [*b, *h]
        options = []
        for chosen in combinations(range(len(pooled)), len(h)):
            picked = set(chosen)
            options.append(([x for i, x in enumerate(pooled) if i not in picked],
                            [pooled[i] for i in chosen]))
        draws = [[*draw, option] for draw in draws for option in options]
    return draws


def _random_statistics(cases: list[tuple[list[float], list[float]]], resamples: int,
                       rng: np.random.Generator) -> np.ndarray:
    """The statistic under `resamples` random splits, each shuffling every case's samples
    within that case (all resamples of one case at once)."""
    import numpy as np
    total = np.zeros(resamples)
    for b, h in cases:
        pooled = np.asarray([*b, *h], dtype=np.float64)
        order = rng.permuted(np.tile(np.arange(len(pooled)), (resamples, 1)), axis=1)
        drawn = pooled[order]
        total += drawn[:, len(b):].mean(axis=1) - drawn[:, :len(b)].mean(axis=1)
    values: np.ndarray = total / len(cases)
    return values


@dataclass(frozen=True)
class Stratum:
    """One stratum (an eval) of a stratified pass/fail test: its passes and samples."""

    base_passes: int
    base_samples: int
    head_passes: int
    head_samples: int


def stratified_pass_test(strata: Sequence[Stratum]) -> ShiftTest:
    """Exact stratified test of "head passes less (more) often than base" over strata.

    The exact form of the Cochran–Mantel–Haenszel test (Birch 1964): within each
    stratum, given its pooled passes, head's passes follow a hypergeometric law when
    head and base behave the same; strata are independent, so the sum of head's passes
    follows the convolution of those laws, computed exactly. `worse` is the probability
    of at most the observed sum, `better` of at least it; `least_*` the smallest value
    either can take given the pooled samples (for Tarone's screen)."""
    import numpy as np
    law = np.ones(1)
    observed = 0
    for stratum in strata:
        if stratum.base_samples <= 0 or stratum.head_samples <= 0:
            continue
        law = np.convolve(law, _head_pass_law(stratum))
        observed += stratum.head_passes
    possible = np.nonzero(law > 0)[0]
    if len(possible) <= 1:
        return ShiftTest(1.0, 1.0, least_worse=1.0, least_better=1.0)
    low, high = int(possible[0]), int(possible[-1])
    worse = float(min(1.0, law[: observed + 1].sum()))
    better = float(min(1.0, law[observed:].sum()))
    # Fewer head passes is worse: the statistic's "large" end is −passes.
    return ShiftTest(worse, better, least_worse=float(law[low]),
                     least_better=float(law[high]),
                     worse_null=_null_law(-possible, law[possible], worse=True),
                     better_null=_null_law(-possible, law[possible], worse=False))


def _head_pass_law(stratum: Stratum) -> np.ndarray:
    """P(head passes = j) for j = 0..head_samples, given the stratum's pooled passes."""
    import numpy as np
    from scipy.stats import hypergeom

    total = stratum.base_samples + stratum.head_samples
    pooled = stratum.base_passes + stratum.head_passes
    values: np.ndarray = hypergeom.pmf(np.arange(stratum.head_samples + 1), total, pooled,
                                      stratum.head_samples)
    return values
