"""Reuse the default branch's report as the baseline instead of re-running base.

The main-branch workflow uploads its report as an artifact named
`turncheck-report-<sha>`. A PR looks for the one of its base commit, else the
newest one from the default branch created before the base commit, and uses it
when found: no provider call is made for the baseline.

Anyone who can open a pull request can upload an artifact with that name (a fork's
run), so the name proves nothing, and the newest artifacts of a repository are mostly
pull requests'. So the lookup starts from the runs, not the artifacts: GitHub lists the
`push`, `schedule` and `workflow_dispatch` runs of the default branch (filtered by
branch, event and commit), each is checked again, and only their artifacts are read.
However many pull-request runs upload artifacts, none can push the baseline out.

Several trusted runs are read (at most `MAX_POOLED_RUNS`, within the `MAX_RUNS_CHECKED`
runs listed): the first one found is the reference (the base commit's own run when
there is one); the runs of its commit are pooled into the base side, and all of them
estimate the run-to-run drift (`turncheck.compare.pool`, docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from turncheck.compare.pool import MAX_POOLED_RUNS, pool_reports
from turncheck.engine.summary import run_totals
from turncheck.github.bundle import BundleError, bundle_from_zip
from turncheck.github.client import ArtifactRef, GitHubApi, GitHubApiError, RunOrigin
from turncheck.report.bundle import BaselineInfo, ReportBundle
from turncheck.report.run import Report

BASELINE_PREFIX = "turncheck-report-"
MAX_BASELINE_BYTES = 25 * 1024 * 1024
TRUSTED_EVENTS = ("push", "schedule", "workflow_dispatch")
MAX_RUNS_CHECKED = 20
"""At most this many trusted runs' artifacts are listed (one API call each) per pull
request. Only default-branch push/schedule/workflow_dispatch runs count against it."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BaselineMode = Literal["auto", "artifact", "rerun"]


def resolve_mode(requested: BaselineMode, run_mode: str) -> Literal["artifact", "rerun"]:
    """`auto` reuses artifacts only when a re-run would spend tokens (live mode)."""
    if requested == "auto":
        return "artifact" if run_mode == "live" else "rerun"
    return requested


@dataclass(frozen=True)
class Trust:
    """Who may supply a baseline: this repository's default branch."""

    repository: str
    default_branch: str | None


@dataclass
class Vetting:
    """Why each candidate artifact was passed over."""

    rejected: list[str] = field(default_factory=list)

    def reject(self, artifact: ArtifactRef, reason: str) -> None:
        self.rejected.append(f"{artifact.name} from run {artifact.run_id}: {reason}")


def untrusted_because(origin: RunOrigin, trust: Trust) -> str | None:
    """Why a run's output cannot be a baseline, or None when it can."""
    if origin.event not in TRUSTED_EVENTS:
        return f"a {origin.event or 'unknown'} run, not push, schedule or workflow_dispatch"
    if origin.head_repository != trust.repository or origin.repository != trust.repository:
        return f"a run of {origin.head_repository or 'another repository'}"
    if origin.head_branch != trust.default_branch:
        return f"a run of branch {origin.head_branch or '?'}, not {trust.default_branch}"
    return None


def trusted_runs(api: GitHubApi, trust: Trust, base_sha: str,
                 base_time: datetime | None) -> list[RunOrigin]:
    """In order of preference: the default branch's trusted runs of the base commit, then
    the newest earlier ones; looked up by branch and event, at most MAX_RUNS_CHECKED."""
    branch = trust.default_branch or ""
    exact = [run for event in TRUSTED_EVENTS
             for run in api.branch_runs(branch, event, head_sha=base_sha,
                                        limit=MAX_RUNS_CHECKED)]
    older: list[RunOrigin] = []
    if base_time is not None:
        older = [run for event in TRUSTED_EVENTS
                 for run in api.branch_runs(branch, event, created_before=base_time,
                                            limit=MAX_RUNS_CHECKED)
                 if run.head_sha != base_sha]
    newest_first = sorted(older, key=lambda run: run.created_at or base_time or _EPOCH,
                          reverse=True)
    ordered: dict[int, RunOrigin] = {}
    for run in exact + newest_first:
        ordered.setdefault(run.id, run)
    return list(ordered.values())[:MAX_RUNS_CHECKED]


def only_suites(report: Report, paths: set[str]) -> Report:
    """The report restricted to `paths` (suites and sample files), totals recomputed."""
    suites = [s for s in report.suites if s.path in paths]
    calibrations = [c for c in report.calibrations if c.path in paths]
    unpriced = set(report.totals.unpriced_models)
    return report.model_copy(update={"suites": suites, "totals": run_totals(suites, unpriced),
                                     "calibrations": calibrations})


def _age_hours(origin: RunOrigin, base_time: datetime | None) -> float | None:
    if base_time is None or origin.created_at is None:
        return None
    return max(0.0, (base_time - origin.created_at).total_seconds() / 3600)


def _bundle_problem(bundle: ReportBundle, origin: RunOrigin, trust: Trust) -> str | None:
    if bundle.repository != trust.repository or bundle.head_sha != origin.head_sha:
        return "its report names another repository or commit than its run"
    if bundle.pull_number is not None:
        return "its report is a pull request's"
    return None


def load_artifact_baseline(
    api: GitHubApi,
    base_sha: str,
    base_time: datetime | None,
    trust: Trust,
    suites: set[str],
) -> tuple[Report | None, BaselineInfo]:
    """The baseline report and where it came from; without a report, the info says why."""
    vetting = Vetting()
    if trust.default_branch is None:
        return None, _miss("the default branch is unknown", vetting)
    try:
        runs = trusted_runs(api, trust, base_sha, base_time)
    except GitHubApiError as exc:
        return None, _miss(f"cannot list the default branch's runs: {exc}", vetting)
    found = _trusted_reports(api, runs, trust, suites, vetting)
    if not found:
        reason = f"no trusted {BASELINE_PREFIX}* artifact for {base_sha[:12]} or before it"
        return None, _miss(reason, vetting)
    origin, artifact, reference = found[0]
    age = 0.0 if origin.head_sha == base_sha else _age_hours(origin, base_time)
    report, pool = pool_reports([r for _, _, r in found], base_commit=base_sha,
                                stale_hours=age)
    return report, BaselineInfo(
        source="artifact", artifact=artifact.name, run_id=origin.id,
        commit=origin.head_sha, event=origin.event, age_hours=age,
        saved_tokens=reference.totals.usage.total + reference.totals.judge_usage.total,
        rejected=vetting.rejected, pool=pool)


def _trusted_reports(api: GitHubApi, runs: list[RunOrigin], trust: Trust, suites: set[str],
                     vetting: Vetting) -> list[tuple[RunOrigin, ArtifactRef, Report]]:
    """The valid reports of up to MAX_POOLED_RUNS trusted runs, in order of preference,
    each stamped with its run's commit (what pooling matches runs by)."""
    found: list[tuple[RunOrigin, ArtifactRef, Report]] = []
    for origin in runs:
        if untrusted_because(origin, trust) is not None:
            continue  # GitHub's filter said otherwise; never trust it alone
        read = _from_run(api, origin, trust, suites, vetting)
        if read is not None:
            report, artifact = read
            found.append((origin, artifact,
                          report.model_copy(update={"commit": origin.head_sha})))
        if len(found) >= MAX_POOLED_RUNS:
            break
    return found


def _from_run(api: GitHubApi, origin: RunOrigin, trust: Trust, suites: set[str],
              vetting: Vetting) -> tuple[Report, ArtifactRef] | None:
    """The report of the run's baseline artifact, when it has a valid one."""
    try:
        artifacts = api.run_artifacts(origin.id, BASELINE_PREFIX)
    except GitHubApiError as exc:
        vetting.rejected.append(f"run {origin.id}: cannot list its artifacts ({exc.message})")
        return None
    for artifact in artifacts:
        try:
            bundle = bundle_from_zip(api.download_artifact_by_id(artifact, MAX_BASELINE_BYTES))
        except (GitHubApiError, BundleError) as exc:
            vetting.reject(artifact, f"unreadable ({exc})")
            continue
        problem = _bundle_problem(bundle, origin, trust)
        if problem is not None:
            vetting.reject(artifact, problem)
            continue
        return only_suites(bundle.head, suites), artifact
    return None


def _miss(reason: str, vetting: Vetting) -> BaselineInfo:
    return BaselineInfo(source="rerun", reason=reason, rejected=vetting.rejected)
