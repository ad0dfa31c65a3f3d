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
"""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.stats.pooled import between_run_variance

RunPair = tuple[tuple[int, int], tuple[int, int]]
"""((passes, usable samples) of the base run, (passes, usable samples) of the head run)
of one eval."""

MIN_HISTORY_RUNS = 2
"""Fewer stored runs of main than this cannot show drift: the two sides are used."""


def two_run_variance(pairs: Sequence[RunPair]) -> float:
    """sigma² from one base run and one head run of each eval (see the module docstring)."""
    return between_run_variance([[base, head] for base, head in pairs])
