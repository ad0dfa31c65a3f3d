"""Run-to-run drift when main has fewer than two stored runs to estimate it from.

`stats.pooled.between_run_variance` estimates the run-level drift variance sigma² (logit
scale) from several runs' pass counts per eval. With one stored run of main (or none
but the two sides of the pull request) the only runs at hand are the base run and the
head run, and `two_run_variance` estimates sigma² from them. It is cautious by
construction: a real change of the head adds to the spread between the two runs and
so to the estimate (the tests get wider, never narrower, because of it), and the
estimate is cut at 0 from below, which over the pull requests errs upwards. What it
cannot do is see drift in a run whose evals all pass or all fail (they carry no
information): then sigma² is 0 and the tests assume exchangeable runs.

An eval's own change is part of that spread: one eval that dropped far widens every
test, its own most of all, and could pass for drift. `two_run_variances_without` gives
each eval sigma² from the other evals' runs, for that eval's own test: under "no change" for it
the others' drift is independent of its samples, so its test keeps its level while a
change of its own no longer widens it. With fewer than `MIN_OTHER_EVALS` informative
other evals that estimate is too noisy to trust, and the estimate over all is used.
"""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.stats.pooled import (
    DRIFT_CEILING,
    between_run_variance,
    cautious_estimate,
    drift_term,
)

RunPair = tuple[tuple[int, int], tuple[int, int]]
"""((passes, usable samples) of the base run, (passes, usable samples) of the head run)
of one eval."""

MIN_HISTORY_RUNS = 2
"""Fewer stored runs of main than this cannot show drift: the two sides are used."""


MIN_OTHER_EVALS = 5
"""Informative evals (neither all passed nor all failed over both runs) the estimate
without one eval needs (`two_run_variances_without`)."""


UNSEEN_DRIFT_VARIANCE = DRIFT_CEILING
"""sigma² assumed when no eval can show drift between the two runs (sigma = 0.5 on the
logit scale, the largest drift the false-alarm targets are set for): with one sample
per side, a drift shared by the run's evals and a drop of the whole suite look alike,
and an estimate of 0 would call every such drift a regression."""


def two_run_variance(pairs: Sequence[RunPair]) -> float:
    """sigma² from one base run and one head run of each eval (see the module docstring);
    `UNSEEN_DRIFT_VARIANCE` when no eval has two samples in each run (`drift_unseen`)."""
    if drift_unseen(pairs):
        return UNSEEN_DRIFT_VARIANCE
    return between_run_variance([[base, head] for base, head in pairs], cautious=True)


def drift_unseen(pairs: Sequence[RunPair]) -> bool:
    """No eval has two samples or more in each run: a run of one sample shows its pass
    chance and its drift only together, so the two runs cannot show drift at all."""
    return not any(min(base[1], head[1]) >= 2 for base, head in pairs)


def two_run_variances_without(pairs: Sequence[RunPair]) -> list[float | None]:
    """For each eval, sigma² from every other eval's two runs (`two_run_variance` without
    it); None when fewer than `MIN_OTHER_EVALS` of the others carry information. Each
    eval's drift term is computed once; the cautious estimate over the others is then
    summed again for each eval (quadratic in the evals, but in the same order as
    `two_run_variance`, so the two agree to the last bit)."""
    terms = [drift_term([base, head]) for base, head in pairs]
    informative = [0 < base_passes + head_passes < base_n + head_n
                   for (base_passes, base_n), (head_passes, head_n) in pairs]
    seeing = [min(base[1], head[1]) >= 2 for base, head in pairs]
    everyone = sum(informative)
    found: list[float | None] = []
    for index, (own, sees) in enumerate(zip(informative, seeing, strict=True)):
        if everyone - own < MIN_OTHER_EVALS:
            found.append(None)
            continue
        if sum(seeing) - sees == 0:  # `drift_unseen` among the others
            found.append(UNSEEN_DRIFT_VARIANCE)
            continue
        others = [t for j, t in enumerate(terms) if j != index and t is not None]
        found.append(cautious_estimate(others))
    return found

