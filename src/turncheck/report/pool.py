"""What a pooled base is made of (several trusted runs of main pooled into the base side
of a comparison) and how much to trust it; `compare/pool.py` builds it."""

from __future__ import annotations

import math

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.text.counts import counted

DRIFTING_SIGMA = 0.5
"""Estimated run-to-run drift (logit scale) from which the baseline is called drifting:
a run's pass chance of 0.9 then moves between about 0.8 and 0.95 from run to run."""


class PooledEval(ReportModel):
    suite_path: str
    name: str
    runs: list[tuple[int, int]] = Field(default_factory=list)
    """(passes, usable samples) of this eval in each pooled run."""


class BasePool(ReportModel):
    """What the pooled base is made of, for the test and for the comment."""

    runs: int
    """Runs of the base's commit pooled into the base side."""
    history_runs: int
    """Runs the drift was estimated from (the pooled ones and earlier commits')."""
    drift_variance: float
    """Estimated run-level drift variance sigma² on the logit scale."""
    shared_variance: float | None = None
    """The part of `drift_variance` shared by every eval of a run; None when unknown
    (then all of it is taken as shared)."""
    stale: bool = False
    """The pooled runs are of another commit than the base commit (an earlier one)."""
    stale_hours: float | None = None
    """How much older the pooled runs' commit is than the base commit, when stale and
    known."""
    evals: list[PooledEval] = Field(default_factory=list)

    @property
    def drift_sigma(self) -> float:
        return math.sqrt(self.drift_variance)

    @property
    def drifting(self) -> bool:
        return self.drift_sigma >= DRIFTING_SIGMA

    def runs_of(self, suite_path: str, name: str) -> list[tuple[int, int]] | None:
        return next((e.runs for e in self.evals
                     if e.suite_path == suite_path and e.name == name), None)

    @property
    def note(self) -> str | None:
        """One line for the comment when the baseline needs a second look, else None."""
        problems = []
        if self.stale:
            older = "an older commit" if self.stale_hours is None \
                else f"a commit {self.stale_hours:.0f} h older"
            problems.append(f"stale: from {older} than base")
        if self.drifting:
            problems.append(f"drifting: pass rates move between runs (σ ≈ "
                            f"{self.drift_sigma:.2f} on the logit scale)")
        found = [f"Baseline of {counted(self.runs, 'pooled main run')} is "
                 + "; ".join(problems) + "."] if problems else []
        if self.runs == 1:
            found.append(ONE_RUN_NOTE)
        return " ".join(found) or None


ONE_RUN_NOTE = (
    "Verdicts rest on one stored run of main: a run that happened to pass more often "
    "than usual makes identical changes look worse against it. For a stronger base, "
    "run the main-branch turncheck workflow again on the base commit (workflow_dispatch "
    "or a nightly schedule): its runs are pooled, up to 8.")
"""The comment's word when the base side is a single stored run (docs/statistics.md, "The
level for the pull request in front of you")."""
