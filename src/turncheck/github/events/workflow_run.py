"""`workflow_run`: the trusted second half of the fork-safe flow. It downloads the report
artifact of a fork pull request's run, validates it, binds it to the run's pull request
and posts it as an unverified report: never `success` on the required check (see
`trust.py`)."""

from __future__ import annotations

from turncheck.github.bundle import BundleError, BundleTooLarge, bundle_from_zip
from turncheck.github.client import ArtifactTooLarge, GitHubApi
from turncheck.github.context import WorkflowRun
from turncheck.github.job import ActionError, Job
from turncheck.github.publish import Published, post_check, post_comment, publish
from turncheck.github.trust import (
    UNVERIFIED_CHECK_NAME,
    Provenance,
    TrustError,
    bind_to_run,
    hold_required_check,
    pull_request_of_run,
    read_tree,
    too_large_comment,
    vet_bundle,
)
from turncheck.github.workflow import log
from turncheck.render.comment import MARKER
from turncheck.report.bundle import MAX_BUNDLE_BYTES

ARTIFACT_NAME = "turncheck-report"
MAX_ARTIFACT_BYTES = 25 * 1024 * 1024


def workflow_run_flow(job: Job) -> int:
    run = job.context.workflow_run()
    if run is None:
        raise ActionError("the event payload has no workflow_run")
    api = job.api()
    try:
        archive = api.download_artifact(run.id, ARTIFACT_NAME, MAX_ARTIFACT_BYTES)
        if archive is None:
            log(f"run {run.id} uploaded no {ARTIFACT_NAME!r} artifact; nothing to post")
            return 0
        bundle = bundle_from_zip(archive)
    except (ArtifactTooLarge, BundleTooLarge) as exc:
        return post_too_large(job, api, run, str(exc))
    except BundleError as exc:
        raise ActionError(f"the {ARTIFACT_NAME} artifact of run {run.id}: {exc}") from None
    # The artifact is untrusted: post it only to the run's own PR, and never as a pass.
    try:
        bind_to_run(bundle, run, job.context.repository, api)
        bundle, linkable = vet_bundle(bundle, read_tree(api, run.head_sha))
    except TrustError as exc:
        raise ActionError(f"not posting the {ARTIFACT_NAME} artifact of run {run.id}: "
                          f"{exc}") from None
    source = f"run {run.id} of {run.head_repository}"
    return publish(job, bundle, nothing_changed=False,
                   provenance=Provenance(False, source, linkable))


def post_too_large(job: Job, api: GitHubApi, run: WorkflowRun, problem: str) -> int:
    """A fork report over the cap: a clear comment and a failing unverified check on the
    run's own pull request (found from GitHub's data), the required check held."""
    try:
        number = pull_request_of_run(run, api)
    except TrustError as exc:
        raise ActionError(f"the {ARTIFACT_NAME} artifact of run {run.id}: {problem}; not "
                          f"posting: {exc}") from None
    source = f"run {run.id} of {run.head_repository or job.context.repository}"
    label = job.inputs.trusted_label
    body = too_large_comment(MARKER, source, MAX_BUNDLE_BYTES, label)
    published = Published()
    post_comment(api, number, body, MARKER, job.inputs.comment, published)
    post_check(api, run.head_sha, f"unverified: the fork's report is too large ({problem})",
               body.removeprefix(MARKER + "\n"), True, [], job.context.run_url, published,
               name=UNVERIFIED_CHECK_NAME, verified=False)
    hold_required_check(api, run.head_sha, label, job.context.run_url)
    log(f"::error title=turncheck::the {ARTIFACT_NAME} artifact of run {run.id}: {problem}")
    return 1
