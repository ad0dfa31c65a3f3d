"""Reuse the default branch's report as the baseline instead of re-running base.

The main-branch workflow uploads its report as an artifact named
`turncheck-report-<sha>`. A PR looks for the one of its base commit, else the
newest one from the default branch created before the base commit, and uses it
when found: no provider call is made for the baseline.

Anyone who can open a pull request can upload an artifact with that name (a fork's
run), so the name proves nothing. An artifact is used only when the Actions API says
its run was a `push`, `schedule` or `workflow_dispatch` run of the default branch of
this repository; every other candidate is rejected, and the comment says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from turncheck.engine.report import Report
from turncheck.engine.summary import run_totals
from turncheck.github.bundle import BaselineInfo, BundleError, ReportBundle, bundle_from_zip
from turncheck.github.client import ArtifactRef, GitHubApi, GitHubApiError, RunOrigin

BASELINE_PREFIX = "turncheck-report-"
MAX_BASELINE_BYTES = 25 * 1024 * 1024
TRUSTED_EVENTS = ("push", "schedule", "workflow_dispatch")
MAX_RUNS_CHECKED = 20
"""At most this many candidate runs are looked up (one API call each) per pull request."""
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
    """Candidates looked at, in order of preference, and why each one was rejected."""

    api: GitHubApi
    trust: Trust
    rejected: list[str] = field(default_factory=list)
    origins: dict[int, RunOrigin | str] = field(default_factory=dict)

    def reject(self, artifact: ArtifactRef, reason: str) -> None:
        self.rejected.append(f"{artifact.name} from run {artifact.run_id}: {reason}")

    def trusted(self, artifact: ArtifactRef) -> RunOrigin | None:
        """The artifact's run when it is a trusted default-branch run, else None (rejected)."""
        reason = self._reason(artifact)
        if isinstance(reason, str):
            self.reject(artifact, reason)
            return None
        return reason

    def _reason(self, artifact: ArtifactRef) -> RunOrigin | str:
        if artifact.run_id is None:
            return "no workflow run"
        if (artifact.repository_id is not None and artifact.head_repository_id is not None
                and artifact.head_repository_id != artifact.repository_id):
            return "built from another repository (a fork)"
        if self.trust.default_branch is None:
            return "the default branch is unknown"
        origin = self._origin(artifact.run_id)
        if isinstance(origin, str):
            return origin
        problem = untrusted_because(origin, self.trust)
        if problem is None and artifact.head_sha not in (None, origin.head_sha):
            problem = "the artifact and its run name different commits"
        return origin if problem is None else problem

    def _origin(self, run_id: int) -> RunOrigin | str:
        if run_id not in self.origins:
            if len(self.origins) >= MAX_RUNS_CHECKED:
                return f"not checked (more than {MAX_RUNS_CHECKED} candidate runs)"
            try:
                self.origins[run_id] = self.api.workflow_run_origin(run_id)
            except GitHubApiError as exc:
                self.origins[run_id] = f"cannot read its run ({exc.message})"
        return self.origins[run_id]


def untrusted_because(origin: RunOrigin, trust: Trust) -> str | None:
    """Why a run's output cannot be a baseline, or None when it can."""
    if origin.event not in TRUSTED_EVENTS:
        return f"a {origin.event or 'unknown'} run, not push, schedule or workflow_dispatch"
    if origin.head_repository != trust.repository or origin.repository != trust.repository:
        return f"a run of {origin.head_repository or 'another repository'}"
    if origin.head_branch != trust.default_branch:
        return f"a run of branch {origin.head_branch or '?'}, not {trust.default_branch}"
    return None


def candidates(
    listed: Iterable[ArtifactRef], base_sha: str, base_time: datetime | None,
    default_branch: str | None,
) -> list[ArtifactRef]:
    """In order of preference: the base commit's reports, then older default-branch ones."""
    listed = list(listed)
    exact = [a for a in listed if a.head_sha == base_sha or a.name == BASELINE_PREFIX + base_sha]
    if base_time is None:
        return exact
    older = [
        a for a in listed
        if a not in exact and a.head_branch == default_branch and a.created_at
        and a.created_at <= base_time
    ]
    older.sort(key=lambda a: a.created_at or base_time, reverse=True)
    return exact + older


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
    vetting = Vetting(api, trust)
    try:
        listed = api.find_artifacts(BASELINE_PREFIX)
    except GitHubApiError as exc:
        return None, _miss(f"cannot list the baseline artifacts: {exc}", vetting)
    for artifact in candidates(listed, base_sha, base_time, trust.default_branch):
        origin = vetting.trusted(artifact)
        if origin is None:
            continue
        try:
            bundle = bundle_from_zip(api.download_artifact_by_id(artifact, MAX_BASELINE_BYTES))
        except (GitHubApiError, BundleError) as exc:
            vetting.reject(artifact, f"unreadable ({exc})")
            continue
        problem = _bundle_problem(bundle, origin, trust)
        if problem is not None:
            vetting.reject(artifact, problem)
            continue
        report = only_suites(bundle.head, suites)
        info = BaselineInfo(
            source="artifact", artifact=artifact.name, run_id=artifact.run_id,
            commit=bundle.head_sha, event=origin.event,
            age_hours=0.0 if origin.head_sha == base_sha else _age_hours(artifact, base_time),
            saved_tokens=report.totals.usage.total + report.totals.judge_usage.total,
            rejected=vetting.rejected,
        )
        return report, info
    reason = f"no trusted {BASELINE_PREFIX}* artifact for {base_sha[:12]} or before it"
    return None, _miss(reason, vetting)


def _miss(reason: str, vetting: Vetting) -> BaselineInfo:
    return BaselineInfo(source="rerun", reason=reason, rejected=vetting.rejected)
