"""Do the calibration κ statistics keep their nominal level? (issue 22, item 10)

    python benchmarks/kappa.py [--reps 200] [--seed 7] [--workers 2] [--quick]

Draws (label, score) samples on the −3..3 scale from graders whose joint distribution
is known, so the population κ is known exactly, and measures with the library's own
functions (`turncheck.stats.agreement`):

- coverage of the 95 % κ interval (`bootstrap_interval`, plain and weighted) at
  n = 10, 20 and 50 samples, for three graders: a good one (70 % exact, else one
  point off), a mediocre one (40 % exact, 40 % one off, 20 % two off) and a good one
  on skewed labels (most labels at +2, +3);
- the false-alarm rate of "head's κ is credibly lower" (`swap_test_lower` at 0.025,
  what `compare/calibration.py` flags) between two equally good graders grading the
  same samples independently, and its power against a worse head grader.

Every rate is printed with its Wilson 95 % interval. A coverage target is missed when
the interval lies wholly below 95 %; the false-alarm target when it lies wholly above
2.5 %: so the script fails on a real shortfall, not on the noise of its own draws.
Exit 1 on a miss.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from turncheck.stats.agreement import (  # noqa: E402
    LOWER_LEVEL,
    SCALE,
    bootstrap_interval,
    swap_test_lower,
)
from turncheck.stats.rates import wilson_interval  # noqa: E402

POINTS = len(SCALE)
SIZES = (10, 20, 50)


def grader(label_shares: Sequence[float], exact: float, off: dict[int, float]) -> np.ndarray:
    """Joint distribution P[label, score]: the score is the label, or `d` points off
    (either way, clipped to the scale) with chance off[d]."""
    shares = np.asarray(label_shares, dtype=float) / sum(label_shares)
    joint = np.zeros((POINTS, POINTS))
    for label in range(POINTS):
        joint[label, label] += shares[label] * exact
        for distance, chance in off.items():
            for sign in (-1, 1):
                score = min(POINTS - 1, max(0, label + sign * distance))
                joint[label, score] += shares[label] * chance / 2
    normalised: np.ndarray = joint / joint.sum()
    return normalised


UNIFORM = [1.0] * POINTS
GRADERS = {
    "good": grader(UNIFORM, 0.7, {1: 0.3}),
    "mediocre": grader(UNIFORM, 0.4, {1: 0.4, 2: 0.2}),
    "good, skewed labels": grader([0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.3], 0.6, {1: 0.4}),
}
WORSE = grader(UNIFORM, 0.3, {1: 0.4, 2: 0.3})


def weights(weighted: bool) -> np.ndarray:
    distance = np.arange(POINTS)[:, None] - np.arange(POINTS)[None, :]
    chosen: np.ndarray = (1.0 - distance**2 / (POINTS - 1) ** 2 if weighted
                          else (distance == 0).astype(float))
    return chosen


def population_kappa(joint: np.ndarray, weighted: bool) -> float:
    w = weights(weighted)
    observed = float((w * joint).sum())
    expected = float((w * np.outer(joint.sum(axis=1), joint.sum(axis=0))).sum())
    return (observed - expected) / (1 - expected)


def draw(joint: np.ndarray, count: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    cells = rng.choice(POINTS * POINTS, size=count, p=joint.ravel())
    return [int(c) // POINTS + SCALE[0] for c in cells], [int(c) % POINTS + SCALE[0]
                                                          for c in cells]


def second_score(joint: np.ndarray, labels: Sequence[int], rng: np.random.Generator
                 ) -> list[int]:
    """Another grader's score for the same labels, independently, from `joint`."""
    conditional = joint / joint.sum(axis=1, keepdims=True)
    return [int(rng.choice(POINTS, p=conditional[label - SCALE[0]])) + SCALE[0]
            for label in labels]


@dataclass(frozen=True)
class Job:
    kind: str
    """`coverage`, `null` or `power`."""
    grader: str
    count: int
    weighted: bool
    reps: int
    seed: int


def run_job(job: Job) -> tuple[Job, int, int]:
    """(job, hits, trials): intervals that hold the true κ, or swap-test flags."""
    rng = np.random.default_rng([job.seed, job.count, len(job.grader), job.weighted,
                                 len(job.kind)])
    joint = GRADERS[job.grader]
    hits = trials = 0
    for _ in range(job.reps):
        labels, scores = draw(joint, job.count, rng)
        if job.kind == "coverage":
            interval = bootstrap_interval(labels, scores, weighted=job.weighted)
            if interval is None:
                continue
            truth = population_kappa(joint, job.weighted)
            hits += interval[0] - 1e-9 <= truth <= interval[1] + 1e-9
        else:
            head_joint = joint if job.kind == "null" else WORSE
            head = second_score(head_joint, labels, rng)
            p_value = swap_test_lower(list(zip(labels, scores, strict=True)),
                                      list(zip(labels, head, strict=True)),
                                      weighted=job.weighted)
            if p_value is None:
                continue
            hits += p_value <= LOWER_LEVEL
        trials += 1
    return job, hits, trials


def rate_text(hits: int, trials: int) -> str:
    low, high = wilson_interval(hits, trials)
    return f"{hits / trials:6.1%} [{low:5.1%}, {high:5.1%}]"


def jobs(reps: int, seed: int, sizes: Sequence[int]) -> list[Job]:
    planned = [Job("coverage", name, count, weighted, reps, seed)
               for name in GRADERS for count in sizes for weighted in (True, False)]
    planned += [Job(kind, name, count, True, reps, seed)
                for kind in ("null", "power") for name in ("good", "mediocre")
                for count in sizes]
    return planned


def report(results: Sequence[tuple[Job, int, int]]) -> list[str]:
    missed = []
    print("\nCoverage of the 95 % κ interval (target: not wholly below 95 %)")
    for job, hits, trials in results:
        if job.kind != "coverage" or not trials:
            continue
        label = (f"{'weighted' if job.weighted else 'plain'} κ, {job.grader} "
                 f"(κ = {population_kappa(GRADERS[job.grader], job.weighted):.2f}), "
                 f"n = {job.count}")
        ok = wilson_interval(hits, trials)[1] >= 0.95
        missed += [] if ok else [label]
        print(f"  {label:<52} {rate_text(hits, trials):>24}  >= 95%   {'PASS' if ok else 'MISS'}")
    print(f"\n\"Credibly lower\" (paired swap test, p <= {LOWER_LEVEL:g}), weighted κ")
    for job, hits, trials in results:
        if job.kind == "coverage" or not trials:
            continue
        if job.kind == "null":
            label = f"false alarms, two equally {job.grader} graders, n = {job.count}"
            ok = wilson_interval(hits, trials)[0] <= LOWER_LEVEL
            missed += [] if ok else [label]
            verdict = f"<= {LOWER_LEVEL:.1%}  {'PASS' if ok else 'MISS'}"
        else:
            label = f"power, {job.grader} base -> worse head, n = {job.count}"
            verdict = "info"
        print(f"  {label:<52} {rate_text(hits, trials):>24}  {verdict}")
    return missed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200, help="samples drawn per cell")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    args = parser.parse_args(argv)
    reps, sizes = (4, (10,)) if args.quick else (args.reps, SIZES)
    started = time.perf_counter()
    planned = jobs(reps, args.seed, sizes)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {reps} draws per cell, "
          f"seed {args.seed}; rates with their Wilson 95 % interval")
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = pool.map(run_job, planned)
    else:
        results = [run_job(job) for job in planned]
    missed = report(results)
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    print(f"\nwall {time.perf_counter() - started:.0f} s, CPU {cpu:.0f} s, "
          f"load average at end {os.getloadavg()[0]:.2f}")
    if missed:
        print(f"{len(missed)} target(s) missed: " + "; ".join(missed))
        return 1
    print("every target met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
