"""Who may set the required `turncheck` check, and from what (see docs/trust-model.md).

* A `pull_request` run of a same-repository PR, a `push` run and a maintainer-approved
  `pull_request_target` run are trusted: they post the real verdict on `turncheck`.
* A fork's report (the artifact a fork's `pull_request` run uploaded, posted by the
  `workflow_run` poster, or a fork's own run with a writable token) is data the fork
  controls. It is posted, marked unverified, under `turncheck (unverified fork report)`
  with conclusion `neutral` (or `failure`), never `success`; the required `turncheck`
  check is held at `action_required` until a trusted run replaces it.
* The poster binds every report to the run that triggered it: same repository, same
  head commit, the run's pull request and head repository, checked against the API.
* Every string of a fork's report is data (`vet_bundle`, applied where the poster reads
  it): the working directory must be a directory of the commit, file links are made only
  to the commit's own files, commits must be SHAs, and the provenance the report claims
  (its baseline block) is dropped, never printed.
* A `pull_request_target` run for a fork PR produces a verdict only when a maintainer
  approved this very commit by adding the trusted label (the `labeled` event), reads
  the PR's files as data from a separate checkout, and replays cassettes only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from turncheck.github.check_names import CHECK_NAME, STATUS_CONTEXT, VERDICT_EXTERNAL_ID
from turncheck.github.client import (
    GitHubApi,
    GitHubApiError,
    GitHubPermissionError,
    RepositoryTree,
)
from turncheck.github.context import PullRequest, WorkflowRun
from turncheck.github.workflow import log
from turncheck.report.bundle import ReportBundle
from turncheck.report.run import Report
from turncheck.text.markdown import inline_code, md_text

UNVERIFIED_CHECK_NAME = "turncheck (unverified fork report)"
HOLD_TITLE = "waiting for a maintainer: a fork's own report is not trusted"
TRUSTED_RUN_EVENT = "pull_request_target"


class TrustError(Exception):
    """A report or run that must not be posted or trusted; the message says why."""


@dataclass(frozen=True)
class Provenance:
    """Whether the report's figures were computed by a run we trust."""

    verified: bool
    source: str = ""
    linkable: frozenset[str] | None = None
    """For an untrusted report: the only paths (relative to its working directory) the
    comment may link to, the commit's own files. None: every path (a trusted run's)."""


VERIFIED = Provenance(True)


def bind_to_run(bundle: ReportBundle, run: WorkflowRun, repository: str,
                api: GitHubApi) -> int:
    """The pull request number the report may be posted to, checked against the
    triggering run's payload and the API; raises TrustError otherwise."""
    if run.event != "pull_request":
        raise TrustError(f"run {run.id} is a {run.event or 'unknown'} run; the poster only "
                         "posts reports of pull_request runs")
    if bundle.repository != repository:
        raise TrustError("the report names another repository")
    if bundle.pull_number is None or bundle.head_sha != run.head_sha:
        raise TrustError("the report does not belong to the triggering run's commit")
    number = bundle.pull_number
    # Filled in for same-repository PRs only; empty for forks (then the API decides).
    if run.pull_numbers and number not in run.pull_numbers:
        raise TrustError(f"the report names pull request #{number}, but run {run.id} ran "
                         f"for {', '.join(f'#{n}' for n in run.pull_numbers)}")
    if not run.head_repository:
        raise TrustError(f"the workflow_run payload does not say which repository run "
                         f"{run.id} built")
    head = api.pull_head(number)
    if head.sha != run.head_sha:
        raise TrustError(f"pull request #{number} is not at {run.head_sha[:12]}")
    if head.repository != run.head_repository:
        raise TrustError(f"the report names pull request #{number}, whose head is in "
                         f"{head.repository or 'a deleted repository'}, but run {run.id} "
                         f"built {run.head_repository}")
    if not run.pull_numbers:
        _bind_fork_run(number, head.ref, run, api)
    return number


def _bind_fork_run(number: int, head_ref: str, run: WorkflowRun, api: GitHubApi) -> None:
    """A fork run's payload names no pull request, so the PR is found from what GitHub
    says about the run: its head branch, and the open PRs from that branch. Two PRs of one
    branch (into two base branches) cannot be told apart: the report goes to neither."""
    if head_ref != run.head_branch:
        raise TrustError(f"the report names pull request #{number}, whose head is branch "
                         f"{head_ref or '?'!r}, but run {run.id} built branch "
                         f"{run.head_branch or '?'!r}")
    others = sorted(set(api.open_pulls_from(run.head_repository, run.head_branch)) - {number})
    if others:
        listed = ", ".join(f"#{n}" for n in [number, *others])
        raise TrustError(f"pull requests {listed} all come from {run.head_repository} branch "
                         f"{run.head_branch!r}; run {run.id}'s payload does not say which one "
                         "it ran for, so its report is posted to none (a maintainer's trusted "
                         "run gives each its verdict)")


COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
PATH_SEGMENT = re.compile(r"[A-Za-z0-9._+-]+(?: [A-Za-z0-9._+-]+)*")
UNVERIFIED_BASELINE_NOTE = "baseline: as the fork's run says (its provenance is not shown)"


def read_tree(api: GitHubApi, sha: str) -> RepositoryTree:
    """The commit's paths; when GitHub cannot list them, none (so nothing is linked)."""
    try:
        return api.tree(sha)
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::cannot list the files of {sha[:12]} ({exc}); the "
            "comment links no file")
        return RepositoryTree(frozenset(), frozenset(), truncated=True)


def vet_bundle(bundle: ReportBundle, tree: RepositoryTree) -> tuple[ReportBundle, frozenset[str]]:
    """The one rule for a fork's report, where it is read: every string is data. Raises
    TrustError for a field that cannot be data; returns the bundle with the claims it may
    not make removed, and the paths (relative to its working directory) it may link to.

    Text (names, answers, messages, paths) is escaped by the renderer; what this adds is
    everything that could become a link target or provenance: `working_directory` must be
    a directory of the commit, commits must be SHAs, links go only to the commit's files,
    and the `baseline` block (which run and artifact the base came from) is dropped."""
    if bundle.event != "pull_request":
        raise TrustError(f"the report says it is a {bundle.event[:40]!r} run's, not a "
                         "pull_request run's")
    workdir = vetted_directory(bundle.working_directory, tree)
    prefix = "" if workdir == "." else workdir + "/"
    linkable = frozenset(path.removeprefix(prefix) for path in tree.files
                         if path.startswith(prefix))
    vetted = bundle.model_copy(update={
        "working_directory": workdir,
        "base_sha": _sha_or_none(bundle.base_sha),
        "head": _with_commit(bundle.head, bundle.head_sha),
        "base": None if bundle.base is None else _with_commit(bundle.base,
                                                              _sha_or_none(bundle.base_sha)),
        "baseline": None,
        "saved_tokens": 0,
    })
    return vetted, linkable


def vetted_directory(path: str, tree: RepositoryTree) -> str:
    """`path` when it is `.` or a plain relative directory of the commit, else TrustError."""
    cleaned = path.strip().rstrip("/") or "."
    if cleaned == ".":
        return cleaned
    segments = cleaned.split("/")
    plain = all(PATH_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments)
    if not plain or (cleaned not in tree.directories and not tree.truncated):
        raise TrustError(f"the report's working_directory {path[:80]!r} is not a directory "
                         "of the pull request's commit")
    return cleaned


def _sha_or_none(value: str | None) -> str | None:
    return value if value is not None and COMMIT_SHA.fullmatch(value) else None


def _with_commit(report: Report, commit: str | None) -> Report:
    return report.model_copy(update={"commit": commit})


def pull_request_of_run(run: WorkflowRun, api: GitHubApi) -> int:
    """The one pull request a `pull_request` run built, from GitHub's data alone (for a
    report that cannot be read, so names none); raises TrustError when it is not one."""
    if run.event != "pull_request":
        raise TrustError(f"run {run.id} is a {run.event or 'unknown'} run; the poster only "
                         "posts reports of pull_request runs")
    numbers = list(run.pull_numbers)
    if not numbers and run.head_repository and run.head_branch:
        numbers = [n for n in api.open_pulls_from(run.head_repository, run.head_branch)
                   if api.pull_head(n).sha == run.head_sha]
    if len(numbers) != 1:
        raise TrustError(f"run {run.id} cannot be tied to one pull request "
                         f"({len(numbers)} match)")
    return numbers[0]


def too_large_comment(marker: str, source: str, limit: int, label: str) -> str:
    """The comment for a fork report too large to read: what happened and what now."""
    return (
        f"{marker}\n"
        "## ⛔ turncheck: the fork's report is too large to show\n\n"
        f"The report uploaded by {md_text(source, 200)} is larger than "
        f"{limit // (1024 * 1024)} MiB, turncheck's cap for a report it did not compute, so "
        "it was not read: no figures can be shown. "
        f"The required `{CHECK_NAME}` check waits until a maintainer reviews the changes "
        f"and adds the {inline_code(label)} label, which runs turncheck on this pull "
        "request's files in a trusted workflow.\n"
    )


def approval_problem(pr: PullRequest, label: str) -> str | None:
    """Why a `pull_request_target` run may not give a verdict on this PR, or None."""
    if not pr.from_fork:
        return None
    if pr.action == "labeled" and pr.label == label:
        return None
    return (f"pull request #{pr.number} comes from the fork {pr.head_repository}: a trusted "
            f"run gives a verdict only when a maintainer adds the {label!r} label to the "
            f"reviewed commit (this event is {pr.action or 'unknown'!r}); nothing was posted")


def unverified_banner(source: str, label: str) -> str:
    return (
        "> [!CAUTION]\n"
        f"> **Unverified report** from {md_text(source, 200)}: these figures were computed "
        "in the fork's own workflow run, which the fork controls, so turncheck cannot "
        "vouch for them. "
        f"The required `{CHECK_NAME}` check waits until a maintainer reviews the changes "
        f"and adds the {inline_code(label)} label, which runs turncheck on this pull "
        "request's files in a trusted workflow.\n"
    )


def hold_required_check(api: GitHubApi, sha: str, label: str, run_url: str | None) -> None:
    """Mark the required check `action_required`, unless a trusted verdict is already there."""
    try:
        if any(conclusion is not None and external_id == VERDICT_EXTERNAL_ID
               for conclusion, external_id in api.check_conclusions(sha, CHECK_NAME)):
            log(f"a trusted {CHECK_NAME!r} verdict exists for {sha[:12]}; leaving it")
            return
        summary = (f"A fork's report cannot pass this check. A maintainer can review the "
                   f"pull request and add the `{label}` label to run turncheck on its files "
                   "in a trusted workflow, which sets this check.")
        api.create_check_run(sha, CHECK_NAME, HOLD_TITLE, summary, "", "action_required",
                             details_url=run_url)
        log(f"required check {CHECK_NAME!r}: action_required until a trusted run")
    except GitHubPermissionError:
        _hold_with_status(api, sha, run_url)
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not hold the {CHECK_NAME!r} check: {exc}")


def _hold_with_status(api: GitHubApi, sha: str, run_url: str | None) -> None:
    try:
        api.create_status(sha, "pending", HOLD_TITLE, STATUS_CONTEXT, run_url)
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not hold the {STATUS_CONTEXT!r} status: {exc}")
