"""Reuse the default branch's report as the baseline instead of re-running base.

The main-branch workflow uploads its report as an artifact named
`turncheck-report-<sha>`. A PR looks for the one of its base commit, else the
newest one from the default branch created before the base commit, and uses it
when found: no provider call is made for the baseline.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from turncheck.engine.report import Report
from turncheck.engine.summary import run_totals
from turncheck.github.bundle import BaselineInfo, BundleError, bundle_from_zip
from turncheck.github.client import ArtifactRef, GitHubApi, GitHubApiError

BASELINE_PREFIX = "turncheck-report-"
MAX_BASELINE_BYTES = 25 * 1024 * 1024
BaselineMode = Literal["auto", "artifact", "rerun"]


def resolve_mode(requested: BaselineMode, run_mode: str) -> Literal["artifact", "rerun"]:
    """`auto` reuses artifacts only when a re-run would spend tokens (live mode)."""
    if requested == "auto":
        return "artifact" if run_mode == "live" else "rerun"
    return requested


def pick_artifact(
    candidates: Iterable[ArtifactRef],
    base_sha: str,
    base_time: datetime | None,
    default_branch: str | None,
) -> ArtifactRef | None:
    """The base commit's report, else the newest default-branch report older than base."""
    listed = list(candidates)
    for artifact in listed:
        if artifact.head_sha == base_sha or artifact.name == BASELINE_PREFIX + base_sha:
            return artifact
    if base_time is None:
        return None
    older = [
        a
        for a in listed
        if a.head_branch == default_branch and a.created_at and a.created_at <= base_time
    ]
    return max(older, key=lambda a: a.created_at or base_time, default=None)


def only_suites(report: Report, paths: set[str]) -> Report:
    """The report restricted to `paths` (suites and sample files), totals recomputed."""
    suites = [s for s in report.suites if s.path in paths]
    calibrations = [c for c in report.calibrations if c.path in paths]
    unpriced = set(report.totals.unpriced_models)
    return report.model_copy(update={"suites": suites, "totals": run_totals(suites, unpriced),
                                     "calibrations": calibrations})


def _age_hours(artifact: ArtifactRef, base_time: datetime | None) -> float | None:
    if artifact.head_sha is None or base_time is None or artifact.created_at is None:
        return None
    return max(0.0, (base_time - artifact.created_at).total_seconds() / 3600)


def load_artifact_baseline(
    api: GitHubApi,
    base_sha: str,
    base_time: datetime | None,
    default_branch: str | None,
    suites: set[str],
) -> tuple[Report, BaselineInfo] | str:
    """The baseline report and where it came from, or why none could be used."""
    try:
        artifact = pick_artifact(
            api.find_artifacts(BASELINE_PREFIX), base_sha, base_time, default_branch
        )
        if artifact is None:
            return f"no {BASELINE_PREFIX}* artifact for {base_sha[:12]} or before it"
        bundle = bundle_from_zip(api.download_artifact_by_id(artifact, MAX_BASELINE_BYTES))
    except (GitHubApiError, BundleError) as exc:
        return f"cannot use the baseline artifact: {exc}"
    report = only_suites(bundle.head, suites)
    exact = artifact.head_sha == base_sha
    info = BaselineInfo(
        source="artifact",
        artifact=artifact.name,
        run_id=artifact.run_id,
        commit=bundle.head_sha,
        age_hours=0.0 if exact else _age_hours(artifact, base_time),
        saved_tokens=report.totals.usage.total + report.totals.judge_usage.total,
    )
    return report, info
