"""Agreement between a grader's scores and human labels on the −3..3 scale.

Cohen's κ (1960) corrects exact agreement for the agreement two raters would
reach by chance with their own score frequencies; the quadratically weighted κ
(Cohen 1968) gives partial credit by distance: weight 1 − (i − j)² / (K − 1)²
over the K = 7 points of the scale. The 95 % interval is a percentile bootstrap
over samples (Efron & Tibshirani 1993), seeded so reports are reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCALE = tuple(range(-3, 4))
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 20_240_601


def _matrix(labels: Sequence[int], scores: Sequence[int]) -> np.ndarray:
    matrix = np.zeros((len(SCALE), len(SCALE)))
    for label, score in zip(labels, scores, strict=True):
        matrix[label - SCALE[0], score - SCALE[0]] += 1
    return matrix


def _weights(weighted: bool) -> np.ndarray:
    points = np.arange(len(SCALE))
    distance = points[:, None] - points[None, :]
    weights: np.ndarray = (
        1.0 - distance.astype(float) ** 2 / (len(SCALE) - 1) ** 2
        if weighted else (distance == 0).astype(float)
    )
    return weights


def _kappa_of(matrix: np.ndarray, weights: np.ndarray) -> float | None:
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


def bootstrap_interval(labels: Sequence[int], scores: Sequence[int], weighted: bool = False,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                       ) -> tuple[float, float] | None:
    """Percentile bootstrap 95 % interval of κ, resampling samples with replacement."""
    count = len(labels)
    if count < 2:
        return None
    rng = np.random.default_rng(seed)
    weights = _weights(weighted)
    label_index = np.asarray(labels) - SCALE[0]
    score_index = np.asarray(scores) - SCALE[0]
    values = []
    for _ in range(resamples):
        picked = rng.integers(0, count, count)
        matrix = np.zeros((len(SCALE), len(SCALE)))
        np.add.at(matrix, (label_index[picked], score_index[picked]), 1)
        value = _kappa_of(matrix, weights)
        if value is not None:
            values.append(value)
    if not values:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


Pair = tuple[int, int]
"""(label, score) of one sample."""


def bootstrap_difference(base: Sequence[Pair], head: Sequence[Pair], weighted: bool = True,
                         resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
                         ) -> tuple[float, float] | None:
    """Paired percentile bootstrap 95 % interval of κ(head) − κ(base).

    `base[i]` and `head[i]` are the same sample graded at base and at head; each
    resample draws samples with replacement and takes both sides' κ on the same draw,
    so the sample-to-sample variation that both graders share cancels out. None with
    fewer than two samples, or when κ is undefined on every resample."""
    count = len(base)
    if count < 2 or len(head) != count:
        return None
    rng = np.random.default_rng(seed)
    weights = _weights(weighted)
    sides = [(np.asarray([p[0] for p in side]) - SCALE[0],
              np.asarray([p[1] for p in side]) - SCALE[0]) for side in (base, head)]
    values = []
    for _ in range(resamples):
        picked = rng.integers(0, count, count)
        kappas = []
        for labels, scores in sides:
            matrix = np.zeros((len(SCALE), len(SCALE)))
            np.add.at(matrix, (labels[picked], scores[picked]), 1)
            kappas.append(_kappa_of(matrix, weights))
        if kappas[0] is not None and kappas[1] is not None:
            values.append(kappas[1] - kappas[0])
    if not values:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


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
