"""Agreement between a grader's scores and human labels on the −3..3 scale.

Cohen's κ (1960) corrects exact agreement for the agreement two raters would
reach by chance with their own score frequencies; the quadratically weighted κ
(Cohen 1968) gives partial credit by distance: weight 1 − (i − j)² / (K − 1)²
over the K = 7 points of the scale.

The 95 % interval of κ is the hull of two intervals, because neither alone reaches
its nominal coverage on 10-50 samples (benchmarks/kappa.py measures it): the BCa
bootstrap (Efron 1987, `scipy.stats.bootstrap`, seeded so reports are reproducible)
is close at n ≥ 20 but under-covers at n = 10, where κ's sampling distribution is
bounded and skewed; the jackknife interval κ ± t(n−1) · SE, with the SE floored at
1/n (one sample's worth), covers small samples but is short at larger n when κ is
skewed. Base vs head: a paired bootstrap interval of the difference for display, and
an exact-in-distribution sign-flip (swap) test for "credibly lower".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SCALE = tuple(range(-3, 4))
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 20_240_601
CONFIDENCE = 0.95
LOWER_LEVEL = 0.025
"""One-sided level of "head's κ is credibly lower" (the lower tail of a 95 % interval)."""


def _matrix(labels: Sequence[int], scores: Sequence[int]) -> np.ndarray:
    import numpy as np
    matrix = np.zeros((len(SCALE), len(SCALE)))
    for label, score in zip(labels, scores, strict=True):
        matrix[label - SCALE[0], score - SCALE[0]] += 1
    return matrix


def _weights(weighted: bool) -> np.ndarray:
    import numpy as np
    points = np.arange(len(SCALE))
    distance = points[:, None] - points[None, :]
    weights: np.ndarray = (
        1.0 - distance.astype(float) ** 2 / (len(SCALE) - 1) ** 2
        if weighted else (distance == 0).astype(float)
    )
    return weights


def _kappa_of(matrix: np.ndarray, weights: np.ndarray) -> float | None:
    import numpy as np
    total = matrix.sum()
    if total == 0:
        return None
    observed = float((weights * matrix).sum() / total)
    expected_matrix = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / total / total
    expected = float((weights * expected_matrix).sum())
    if expected >= 1 - 1e-12:
        return 1.0 if observed >= 1 - 1e-12 else None
    return (observed - expected) / (1 - expected)


def cohen_kappa(labels: Sequence[int], scores: Sequence[int], weighted: bool = False
                ) -> float | None:
    """Cohen's κ (or quadratically weighted κ); None without samples or when
    undefined (both raters always give one and the same score but disagree)."""
    return _kappa_of(_matrix(labels, scores), _weights(weighted))


def kappa_of_samples(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray
                     ) -> np.ndarray:
    """κ of every row of `labels`/`scores` (scale indices 0..K−1, samples on the last
    axis), vectorised; NaN where κ is undefined."""
    import numpy as np
    observed = weights[labels, scores].mean(axis=-1)
    points = np.arange(len(SCALE))
    label_share = (labels[..., None] == points).mean(axis=-2)
    score_share = (scores[..., None] == points).mean(axis=-2)
    expected = np.einsum("...i,ij,...j->...", label_share, weights, score_share)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - expected) / (1 - expected)
    perfect = np.isclose(expected, 1.0) & np.isclose(observed, 1.0)
    result: np.ndarray = np.where(perfect, 1.0, np.where(np.isclose(expected, 1.0), np.nan,
                                                         kappa))
    return result


def _indices(values: Sequence[int]) -> np.ndarray:
    import numpy as np
    return np.asarray(values, dtype=np.intp) - SCALE[0]


def _bca(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray, resamples: int,
         seed: int) -> tuple[float, float] | None:
    import numpy as np
    from scipy import stats
    def statistic(label_rows: np.ndarray, score_rows: np.ndarray, axis: int = -1
                  ) -> np.ndarray:
        return kappa_of_samples(np.moveaxis(label_rows, axis, -1),
                                np.moveaxis(score_rows, axis, -1), weights)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples: NaN, handled below
        found = stats.bootstrap((labels, scores), statistic, paired=True, vectorized=True,
                                n_resamples=resamples, method="BCa",
                                confidence_level=CONFIDENCE,
                                rng=np.random.default_rng(seed))
    low, high = found.confidence_interval
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return float(low), float(high)


def _jackknife(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray
               ) -> tuple[float, float] | None:
    import numpy as np
    from scipy import stats
    count = len(labels)
    estimate = float(kappa_of_samples(labels, scores, weights))
    left_out = ~np.eye(count, dtype=bool)
    rows = np.broadcast_to(np.arange(count), (count, count))[left_out].reshape(count, -1)
    values = kappa_of_samples(labels[rows], scores[rows], weights)
    values = values[np.isfinite(values)]
    if not np.isfinite(estimate) or len(values) < 2:
        return None
    spread = math.sqrt((len(values) - 1) / len(values)
                       * float(((values - values.mean()) ** 2).sum()))
    half = float(stats.t.ppf(1 - (1 - CONFIDENCE) / 2, count - 1)) * max(spread, 1 / count)
    return estimate - half, estimate + half


def bootstrap_interval(labels: Sequence[int], scores: Sequence[int], weighted: bool = False,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                       ) -> tuple[float, float] | None:
    """95 % interval of κ: the hull of the BCa bootstrap and the floored jackknife
    interval (module docstring), clipped to [−1, 1]; None under 2 samples or when κ is
    undefined."""
    if len(labels) < 2:
        return None
    weights = _weights(weighted)
    label_index, score_index = _indices(labels), _indices(scores)
    found = [interval for interval in (
        _bca(label_index, score_index, weights, resamples, seed),
        _jackknife(label_index, score_index, weights)) if interval is not None]
    if not found:
        return None
    low = max(-1.0, min(i[0] for i in found))
    high = min(1.0, max(i[1] for i in found))
    return low, high


Pair = tuple[int, int]
"""(label, score) of one sample."""


def bootstrap_difference(base: Sequence[Pair], head: Sequence[Pair], weighted: bool = True,
                         resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                         ) -> tuple[float, float] | None:
    """Paired percentile bootstrap 95 % interval of κ(head) − κ(base), for display
    (whether head is credibly lower is `swap_test_lower`'s).

    `base[i]` and `head[i]` are the same sample graded at base and at head; each
    resample draws samples with replacement and takes both sides' κ on the same draw,
    so the sample-to-sample variation that both graders share cancels out. None with
    fewer than two samples, or when κ is undefined on every resample."""
    import numpy as np
    count = len(base)
    if count < 2 or len(head) != count:
        return None
    weights = _weights(weighted)
    picked = np.random.default_rng(seed).integers(0, count, (resamples, count))
    kappas = [kappa_of_samples(_indices([p[0] for p in side])[picked],
                               _indices([p[1] for p in side])[picked], weights)
              for side in (base, head)]
    values = (kappas[1] - kappas[0])[np.isfinite(kappas[0]) & np.isfinite(kappas[1])]
    if not len(values):
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


SWAPS = 4_000


def swap_test_lower(base: Sequence[Pair], head: Sequence[Pair], weighted: bool = True,
                    swaps: int = SWAPS, seed: int = BOOTSTRAP_SEED) -> float | None:
    """One-sided p-value for "head's κ is lower than base's" on paired samples.

    Under "the two graders are interchangeable" (equally good, same kind of errors),
    the base and head scores of one sample could have come in either order: each
    random swap of a sample's two scores is as likely as the observed data. The
    p-value is the share of `swaps` random swap patterns (plus the observed one) whose
    κ(head) − κ(base) is at most the observed difference, so "credibly lower" at
    p ≤ 0.025 has at most that false-alarm rate between equally good graders (Good
    2005, permutation tests; the Monte Carlo (k + 1) / (m + 1) form is exact too).
    None with fewer than two paired samples or an undefined κ."""
    import numpy as np
    count = len(base)
    if count < 2 or len(head) != count:
        return None
    weights = _weights(weighted)
    labels = _indices([p[0] for p in base])
    before, after = _indices([p[1] for p in base]), _indices([p[1] for p in head])
    observed = kappa_of_samples(labels, after, weights) - kappa_of_samples(labels, before,
                                                                           weights)
    if not np.isfinite(observed):
        return None
    swap = np.random.default_rng(seed).random((swaps, count)) < 0.5
    label_rows = np.broadcast_to(labels, (swaps, count))
    as_head = np.where(swap, before, after)
    as_base = np.where(swap, after, before)
    differences = (kappa_of_samples(label_rows, as_head, weights)
                   - kappa_of_samples(label_rows, as_base, weights))
    at_most = int(np.sum(np.nan_to_num(differences, nan=np.inf) <= observed + 1e-12))
    return (at_most + 1) / (swaps + 1)


def within_one(labels: Sequence[int], scores: Sequence[int]) -> float | None:
    """Share of samples scored at most one point from their label."""
    if not labels:
        return None
    return sum(abs(a - b) <= 1 for a, b in zip(labels, scores, strict=True)) / len(labels)


@dataclass(frozen=True)
class Confusion:
    """Pass/fail agreement at a threshold: a sample passes when its value ≥ threshold."""

    true_positive: int
    false_negative: int
    false_positive: int
    true_negative: int

    @property
    def tpr(self) -> float | None:
        positives = self.true_positive + self.false_negative
        return self.true_positive / positives if positives else None

    @property
    def tnr(self) -> float | None:
        negatives = self.true_negative + self.false_positive
        return self.true_negative / negatives if negatives else None


def confusion(labels: Sequence[int], scores: Sequence[int], threshold: int) -> Confusion:
    pairs = [(label >= threshold, score >= threshold)
             for label, score in zip(labels, scores, strict=True)]
    return Confusion(
        true_positive=sum(lab and sc for lab, sc in pairs),
        false_negative=sum(lab and not sc for lab, sc in pairs),
        false_positive=sum(sc and not lab for lab, sc in pairs),
        true_negative=sum(not lab and not sc for lab, sc in pairs),
    )
