"""`pull_request` (and the maintainer-approved `pull_request_target` trusted run): the
changed suites at the pull request's head and base, compared; one comment and a check
run. A fork's own run posts only an unverified report (docs/trust-model.md)."""

from __future__ import annotations

from turncheck import git
from turncheck.github.context import PullRequest
from turncheck.github.estimate import estimate_flow
from turncheck.github.job import ActionError, Job
from turncheck.github.shards import merged_flow
from turncheck.github.trust import TRUSTED_RUN_EVENT, VERIFIED, Provenance, approval_problem
from turncheck.github.two_commits import compare_flow, refuse_base_checkout
from turncheck.github.workflow import escape_data, log
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.two_commit_runner import Commits
from turncheck.text.counts import counted


def pull_request_flow(job: Job) -> int:
    pr = job.context.pull_request()
    if pr is None:
        raise ActionError("the event payload has no pull_request")
    provenance = VERIFIED
    if job.context.event_name == TRUSTED_RUN_EVENT:
        problem = trusted_run_problem(job, pr)
        if problem is not None:
            log(f"::notice title=turncheck::{escape_data(problem)}")
            return 0
    elif pr.from_fork:  # a fork's own run: its figures are its own word
        provenance = Provenance(False, f"the fork {pr.head_repository}")
    if job.inputs.merge_reports:
        return merged_flow(job, provenance)
    if job.context.event_name != TRUSTED_RUN_EVENT:  # a trusted run reads pr-checkout
        refuse_base_checkout(job, pr.base_sha, pr.head_sha)
    base = job.inputs.base_ref and git.resolve(job.root, job.inputs.base_ref)
    base_sha = base or pr.base_sha
    changes = changed_files_of(job, pr, base_sha)
    if job.inputs.mode == "estimate":
        return estimate_flow(job, pr.number, changes.head_suites, pr.head_sha, base_sha,
                             changes.samples)
    log(f"PR #{pr.number}: {counted(len(changes.head_suites), 'changed suite')} at head, "
        f"{len(changes.base_suites)} at base, {counted(len(changes.samples), 'sample file')}")
    return compare_flow(job, Commits(base=base_sha, head=pr.head_sha), changes, pr.number,
                        provenance)


def changed_files_of(job: Job, pr: PullRequest, base: str) -> SuiteChanges:
    workspace = job.root
    files = git.changed_files(workspace, base, pr.head_sha)
    if files is None and git.fetch(workspace, "origin", [base, pr.head_sha]):
        files = git.changed_files(workspace, base, pr.head_sha)
    if files is None:
        log("::notice title=turncheck::the base commit is not in the checkout's history; using "
            "the pull-request files API instead. Set `fetch-depth: 0` on actions/checkout so "
            "turncheck can read the base versions of your suites.")
        files = job.api().pr_files(pr.number)
    return job.checkout.changes_among(files)


def trusted_run_problem(job: Job, pr: PullRequest) -> str | None:
    """Why this `pull_request_target` run may not evaluate the PR, or None."""
    problem = approval_problem(pr, job.inputs.trusted_label)
    if problem is not None:
        return problem
    if job.inputs.pr_checkout is None:
        raise ActionError("under pull_request_target, check the pull request out into its "
                          "own directory (actions/checkout with `path:` and "
                          "`persist-credentials: false`) and pass it as `pr-checkout`")
    if job.inputs.mode != "replay":
        raise ActionError("under pull_request_target turncheck only replays cassettes: "
                          f"mode {job.inputs.mode!r} would send the PR's prompts with secrets")
    at = git.resolve(job.root, "HEAD")
    if at != pr.head_sha:
        raise ActionError(f"pr-checkout is at {(at or 'no commit')[:12]}, not the pull "
                          f"request's head {pr.head_sha[:12]}")
    return None
