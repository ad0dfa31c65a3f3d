"""A re-run of a failed check adds evidence instead of starting afresh.

Re-running a live check on the same commits draws fresh head samples; tested alone,
a true drop re-run until green is eventually green. So a re-run attempt
(`GITHUB_RUN_ATTEMPT` > 1) reads the report the earlier attempt of the same run
uploaded (`ATTEMPT_PREFIX` + its attempt number; docs/action.md) and pools that
report's head samples into its own head (`compare.pool.pool_reports`), and its base
samples too when every attempt re-ran the base beside the head: a false fail
then needs the pooled samples to fail again, and a true drop is tested on ever more
samples. Each attempt's report holds every earlier attempt's samples, so only the
newest earlier one is read.

The earlier report is read as untrusted data: its size is capped, its schema checked,
and it is used only when it names this repository, pull request, run, base and head
commits and an earlier attempt whose base was taken the same way; otherwise it is
ignored with a one-line notice, as when there is none (no upload step, expired).
"""

from __future__ import annotations

from dataclasses import dataclass

from turncheck.compare.pool import pool_reports
from turncheck.github.bundle import BundleError, bundle_from_zip
from turncheck.github.client import ArtifactRef, GitHubApiError
from turncheck.github.job import Job
from turncheck.report.bundle import BaselineInfo, ReportBundle
from turncheck.report.run import Report
from turncheck.sides.two_commit_runner import Commits

ATTEMPT_PREFIX = "turncheck-attempt-"
"""The documented PR workflow uploads each attempt's report as `turncheck-attempt-<n>`."""
MAX_ATTEMPT_BYTES = 25 * 1024 * 1024
MAX_ARTIFACTS_READ = 3
"""At most this many of the run's attempt artifacts are downloaded, newest first."""


@dataclass(frozen=True)
class Earlier:
    """The newest usable earlier attempt's report, or why there is none to pool."""

    bundle: ReportBundle | None
    notice: str | None = None


@dataclass(frozen=True)
class ThisAttempt:
    """What an earlier attempt's report must match to be pooled."""

    repository: str
    run_id: str
    attempt: int
    pull_number: int | None
    commits: Commits
    base_ran: bool
    """This attempt re-ran the base beside the head (else the base is main's stored runs)."""

    def mismatch(self, bundle: ReportBundle) -> str | None:
        if bundle.repository != self.repository or bundle.run_id != self.run_id:
            return "it is another run's"
        if bundle.pull_number != self.pull_number:
            return "it is another pull request's"
        if bundle.head_sha != self.commits.head or bundle.base_sha != self.commits.base:
            return "it is of other commits"
        if bundle.run_attempt is None or not 1 <= bundle.run_attempt < self.attempt:
            return "it is not an earlier attempt's"
        if base_ran_with_head(bundle.base, bundle.baseline) != self.base_ran:
            return "its base was taken otherwise (re-run beside the head, or main's runs)"
        return None


def this_attempt(job: Job, commits: Commits, number: int | None,
                 base_ran: bool) -> ThisAttempt:
    context = job.context
    return ThisAttempt(context.repository, context.run_id, context.run_attempt, number,
                       commits, base_ran)


def base_ran_with_head(base: Report | None, baseline: BaselineInfo | None) -> bool:
    return base is not None and (baseline is None or baseline.source == "rerun")


def pools_attempts(job: Job) -> bool:
    """Only a live re-run draws fresh samples; replays answer alike every attempt."""
    context = job.context
    return (context.run_attempt > 1 and job.inputs.mode == "live"
            and context.run_id.isdigit() and job.inputs.shard is None)


def earlier_attempt(job: Job, attempt: ThisAttempt) -> Earlier:
    """The newest earlier attempt's report that matches `attempt`, read from the run's
    artifacts, or the one-line reason it cannot be pooled."""
    if not job.inputs.github_token:
        return Earlier(None, f"no github-token to read the earlier attempt's report; {AFRESH}")
    api = job.api()
    try:
        listed = api.run_artifacts(int(attempt.run_id), ATTEMPT_PREFIX)
    except GitHubApiError as exc:
        return Earlier(None, f"cannot list this run's artifacts ({exc.message}); {AFRESH}")
    artifacts = [a for a in listed if _attempt_named(a) < attempt.attempt]
    if not artifacts:
        return Earlier(None, f"no earlier attempt's report ({ATTEMPT_PREFIX}<n> artifact, "
                             f"missing or expired) on this run; {AFRESH}")
    problems = []
    for artifact in sorted(artifacts, key=_attempt_named, reverse=True)[:MAX_ARTIFACTS_READ]:
        try:
            bundle = bundle_from_zip(api.download_artifact_by_id(artifact, MAX_ATTEMPT_BYTES))
        except (GitHubApiError, BundleError) as exc:
            problems.append(f"{artifact.name} unreadable ({exc})")
            continue
        problem = attempt.mismatch(bundle)
        if problem is None:
            return Earlier(bundle)
        problems.append(f"{artifact.name} ignored: {problem}")
    return Earlier(None, f"{problems[0]}; {AFRESH}")


AFRESH = "this re-run samples the head afresh"


def _attempt_named(artifact: ArtifactRef) -> int:
    """The attempt number in the artifact's name (only an order to read them in: the
    report inside says which attempt it is)."""
    suffix = artifact.name.removeprefix(ATTEMPT_PREFIX)
    return int(suffix) if suffix.isdigit() else 0


def pooled_sides(head: Report, base: Report | None, earlier: ReportBundle,
                 commits: Commits) -> tuple[Report, Report | None]:
    """This attempt's sides with the earlier attempts' samples pooled in: the head always;
    the base when it was re-run beside the head in every attempt (then both sides keep
    their samples of each attempt, taken together). `earlier` matched `this_attempt`."""
    head = pooled(head, earlier.head, commits.head or "")
    if base is not None and earlier.base is not None and base_ran_with_head(
            earlier.base, earlier.baseline):
        base = pooled(base, earlier.base, commits.base or "")
    return head, base


def pooled(ours: Report, theirs: Report, commit: str) -> Report:
    """`ours` with `theirs`' samples of each repeated eval pooled in (matched by eval
    identity; an eval `theirs` lacks stays as run)."""
    stamped = [r.model_copy(update={"commit": commit}) for r in (ours, theirs)]
    report, _ = pool_reports(stamped)
    return report


def pooled_note(earlier_attempts: int) -> str | None:
    """The comment's word on a re-run whose head pools earlier attempts' samples."""
    if earlier_attempts == 0:
        return None
    whose = "attempt's" if earlier_attempts == 1 else "attempts'"
    return (f"re-run: head samples pooled with {earlier_attempts} earlier {whose} samples "
            "of the same commits (a re-run adds evidence; it does not start afresh)")
