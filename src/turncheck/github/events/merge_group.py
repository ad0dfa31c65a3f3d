"""`merge_group`: the same comparison as a pull request's for a merge queue's group (its
base and head commits), published as the same check run on the group's head; no comment."""

from __future__ import annotations

from turncheck import git
from turncheck.github.context import MergeGroup
from turncheck.github.job import ActionError, Job
from turncheck.github.shards import merged_flow
from turncheck.github.two_commits import compare_flow, refuse_base_checkout
from turncheck.github.workflow import log
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.two_commit_runner import Commits
from turncheck.text.counts import counted


def merge_group_flow(job: Job) -> int:
    group = job.context.merge_group()
    if group is None:
        raise ActionError("the event payload has no merge_group")
    if job.inputs.merge_reports:
        return merged_flow(job)
    base_sha = merge_group_base(job, group)
    refuse_base_checkout(job, base_sha, group.head_sha)
    changes = merge_group_changes(job, base_sha, group.head_sha)
    log(f"merge group {group.head_sha[:12]} onto {group.base_branch or base_sha[:12]}: "
        f"{counted(len(changes.head_suites), 'changed suite')} at head, "
        f"{len(changes.base_suites)} at base, {counted(len(changes.samples), 'sample file')}")
    return compare_flow(job, Commits(base=base_sha, head=group.head_sha), changes, None)


def merge_group_base(job: Job, group: MergeGroup) -> str:
    workspace = job.context.workspace
    if job.inputs.base_ref:
        chosen = git.resolve(workspace, job.inputs.base_ref)
        if chosen is None:
            raise ActionError(f"base-ref {job.inputs.base_ref!r} names no commit here")
        return chosen
    if group.base_sha:
        return group.base_sha
    found = None
    if group.base_branch:
        found = git.resolve(workspace, f"origin/{group.base_branch}")
        if found is None and git.fetch(workspace, "origin", [group.base_ref]):
            found = git.resolve(workspace, "FETCH_HEAD")
    if found is None:
        raise ActionError("the merge_group payload has no base_sha and its base_ref "
                          f"{group.base_ref!r} cannot be resolved in the checkout")
    return found


def merge_group_changes(job: Job, base_sha: str, head_sha: str) -> SuiteChanges:
    workspace = job.context.workspace
    files = git.changed_files(workspace, base_sha, head_sha)
    if files is None and git.fetch(workspace, "origin", [base_sha, head_sha]):
        files = git.changed_files(workspace, base_sha, head_sha)
    if files is None:
        raise ActionError(f"cannot diff the merge group's base {base_sha[:12]} and head "
                          f"{head_sha[:12]}: set `fetch-depth: 0` on actions/checkout")
    return job.checkout.changes_among(files)
