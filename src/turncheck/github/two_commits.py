"""The comparison a pull request or a merge queue's group gets: its changed suites run
at head and at base (or the base taken from main's artifact), written as one bundle and
published (unless this job is one shard of several)."""

from __future__ import annotations

from turncheck import git
from turncheck.engine.interruption import STOP
from turncheck.github.attempts import (
    AFRESH,
    base_ran_with_head,
    earlier_attempt,
    pooled_sides,
    pools_attempts,
    this_attempt,
)
from turncheck.github.baseline import resolve_mode
from turncheck.github.job import ActionError, Job, trusted_baseline, with_token_counts, write_bundle
from turncheck.github.publish import publish
from turncheck.github.trust import VERIFIED, Provenance
from turncheck.github.workflow import escape_data, log
from turncheck.report.bundle import BaselineInfo, ReportBundle
from turncheck.report.run import Report
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.two_commit_runner import Commits
from turncheck.text.counts import counted


def refuse_base_checkout(job: Job, base_sha: str, head_sha: str) -> None:
    """Head results must come from head files: a workspace at the base commit is refused."""
    if head_sha == base_sha:
        return
    try:
        at = git.current_sha(job.context.workspace)
    except git.GitError:
        return
    if at == base_sha:
        raise ActionError(f"the workspace is at the base commit {at[:12]}, not at the head "
                          f"{head_sha[:12]}: check out the triggering commit (actions/checkout "
                          "does by default) so base files are not evaluated as head")


def compare_flow(job: Job, commits: Commits, changes: SuiteChanges, number: int | None,
                 provenance: Provenance = VERIFIED) -> int:
    """Run `changes` at head and base, write the report, publish (unless a shard)."""
    with STOP.keeping():  # after a signal the runs stop at once, and their report is written
        head, base_report, baseline = head_and_base(job, commits, changes)
        head, base_report, earlier_attempts = with_earlier_attempts(
            job, commits, number, (head, base_report), baseline)
        bundle = with_token_counts(ReportBundle(
            repository=job.context.repository, event=job.context.event_name,
            pull_number=number, base_sha=commits.base, head_sha=commits.head or "unknown",
            working_directory=job.inputs.working_directory.as_posix(), renames=changes.renames,
            removed=changes.removed, reasons=changes.reasons, base_suites=changes.base_suites,
            head=head, base=base_report, baseline=baseline, run_id=job.context.run_id or None,
            run_attempt=job.context.run_attempt, earlier_attempts=earlier_attempts,
        ))
        write_bundle(job, bundle)
    STOP.checkpoint()
    if job.inputs.shard is not None:
        shard = job.inputs.shard
        log(f"shard {shard.index}/{shard.count} done; the report job merges the shards and posts")
        return 0
    return publish(job, bundle, changes.empty, provenance)


def with_earlier_attempts(job: Job, commits: Commits, number: int | None,
                          sides: tuple[Report, Report | None], baseline: BaselineInfo | None
                          ) -> tuple[Report, Report | None, int]:
    """On a live re-run, the sides with the earlier attempts' samples pooled in, and how
    many attempts they are (`attempts.py`); else the sides as run and 0."""
    head, base = sides
    if not pools_attempts(job):
        return head, base, 0
    base_ran = base_ran_with_head(base, baseline)
    earlier = earlier_attempt(job, this_attempt(job, commits, number, base_ran))
    if earlier.bundle is None:
        log(f"::notice title=turncheck::{escape_data(earlier.notice or AFRESH)}")
        return head, base, 0
    count = earlier.bundle.earlier_attempts + 1
    pooled = "head and base" if base_ran else "head"
    log(f"re-run: pooling the {pooled} samples of {counted(count, 'earlier attempt')}")
    return (*pooled_sides(head, base, earlier.bundle, commits), count)


def head_and_base(job: Job, commits: Commits, changes: SuiteChanges
                  ) -> tuple[Report, Report | None, BaselineInfo | None]:
    """The head run, and the base: a main-branch artifact when asked and found (the head
    then runs alone), else re-run at the same time as the head."""
    runner = job.runner(commits, changes)
    if not runner.has_base:
        return runner.run_head(), None, None
    if resolve_mode(job.inputs.baseline, job.inputs.mode) == "artifact":
        if job.inputs.shard is not None:  # the report job fetches the artifact once
            return runner.run_head(), None, None
        assert commits.base is not None
        found, info = trusted_baseline(job, commits.base, {*changes.base_suites,
                                                           *changes.base_samples})
        log(info.describe())
        if found is not None:
            return runner.run_head(), found, info
        log("re-running the base commit instead")
    else:
        info = BaselineInfo(source="rerun")
    reports = runner.run()
    return reports.head, reports.base, None if reports.base is None else info
