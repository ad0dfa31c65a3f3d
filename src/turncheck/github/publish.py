"""Tell GitHub a bundle's verdict: the sticky comment, the check run (or a commit
status), the HTML report, annotations, outputs and the step summary. Every flow that
ends with a comparison publishes through `publish`.

Every write degrades gracefully: a read-only token (fork pull requests) is
reported in the log with what to do, and the results stay in the report file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from turncheck.formats.files import refusal_reason, write_text_confined
from turncheck.github.annotations import (
    collect_annotations,
    only_linkable,
    path_prefix,
    print_annotations,
)
from turncheck.github.attempts import pooled_note
from turncheck.github.check_names import CHECK_NAME, STATUS_CONTEXT, VERDICT_EXTERNAL_ID
from turncheck.github.client import (
    Annotation,
    CheckConclusion,
    GitHubApi,
    GitHubApiError,
    GitHubPermissionError,
)
from turncheck.github.inputs import CommentMode
from turncheck.github.job import Job
from turncheck.github.trust import (
    UNVERIFIED_BASELINE_NOTE,
    UNVERIFIED_CHECK_NAME,
    VERIFIED,
    Provenance,
    hold_required_check,
    unverified_banner,
)
from turncheck.github.verdict import bundle_verdict
from turncheck.github.workflow import append_step_summary, escape_data, log, write_outputs
from turncheck.render.comment import (
    CommentContext,
    comment_headline,
    comment_markdown,
    render_summary,
)
from turncheck.render.html_report import render_report
from turncheck.report.bundle import ReportBundle
from turncheck.report.comparison import Comparison


@dataclass
class Published:
    comment_url: str = ""
    check_url: str = ""
    permission_denied: list[str] = field(default_factory=list)


def post_comment(api: GitHubApi, number: int, body: str, marker: str, mode: CommentMode,
                 published: Published, create: bool = True) -> None:
    """Create or update the sticky comment; with `create` False only update one that exists
    (a run where nothing changed any more must replace the old verdict, not add noise)."""
    if mode is CommentMode.NEVER:
        return
    try:
        result = api.upsert_comment(number, body, marker,
                                    "on-change" if mode is CommentMode.ON_CHANGE else "always",
                                    create=create)
    except GitHubPermissionError as exc:
        published.permission_denied.append(f"comment ({exc})")
        return
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not post the PR comment: {exc}")
        return
    if result.action == "skipped":
        return
    published.comment_url = result.url
    log(f"PR comment {result.action}: {result.url}")


def post_check(api: GitHubApi, sha: str, title: str, summary: str, failed: bool,
               items: list[Annotation], run_url: str | None, published: Published,
               text: str = "", name: str = CHECK_NAME, verified: bool = True,
               incomplete: bool = False) -> None:
    """The check run `name` (or, without `checks: write`, a commit status). `summary` is
    the comment's brief form; `text` the full, severity-ordered detail.

    An unverified report (a fork's) never concludes `success`: `neutral` at best, and
    no commit status, whose states have no neutral. Nor does an `incomplete` one (a
    budget stopped some evals): the check cannot vouch for what did not run.
    """
    conclusion: CheckConclusion = "failure" if failed else \
        "success" if verified and not incomplete else "neutral"
    try:
        published.check_url = api.create_check_run(
            sha, name, title, _fit(summary), _fit(text), conclusion, items,
            external_id=VERDICT_EXTERNAL_ID if verified else None)
        log(f"check run: {published.check_url}")
        return
    except GitHubPermissionError as exc:
        if not verified:
            published.permission_denied.append(f"check run ({exc})")
            return
        log(f"no permission to create a check run ({exc}); setting a commit status instead")
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not create the check run: {exc}")
    if not verified:
        return
    try:
        api.create_status(sha, "failure" if failed else "success", title, STATUS_CONTEXT,
                          run_url)
    except GitHubPermissionError as exc:
        published.permission_denied.append(f"check run and commit status ({exc})")
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not set the commit status: {exc}")


CHECK_TEXT_LIMIT = 65_535
"""GitHub's limit for a check run's summary and text (characters; checked in UTF-8 bytes)."""


def _fit(markdown: str) -> str:
    if len(markdown.encode("utf-8")) <= CHECK_TEXT_LIMIT:
        return markdown
    note = "\n\n_Cut to GitHub's size limit; the step summary has everything._\n"
    kept = markdown.encode("utf-8")[:CHECK_TEXT_LIMIT - len(note.encode())]
    text = kept.decode("utf-8", "ignore")
    return text[: text.rfind("\n") + 1] + note


def explain_read_only(published: Published, report_path: Path) -> None:
    if not published.permission_denied:
        return
    log(
        "::warning title=turncheck::The token cannot write here ("
        + "; ".join(published.permission_denied)
        + "). This is expected on pull requests from forks. The results are in "
        + f"{report_path}: upload it with actions/upload-artifact (name: turncheck-report) "
        + "and post it from a workflow_run workflow running `turncheck action` "
        + "(see the README, 'Fork pull requests')."
    )


def outputs(comparison: Comparison, report_path: Path, comment_url: str) -> dict[str, str]:
    head = comparison.totals.head
    head_cost = None if head is None else head.total_cost_usd
    delta = comparison.totals.delta.total_cost_usd if comparison.has_base else None
    return {
        "passed": str(comparison.passed),
        "failed": str(comparison.failed),
        "errors": str(comparison.errors),
        "cost": "" if head_cost is None else f"{head_cost:.6f}",
        "cost-delta": "" if delta is None else f"{delta:.6f}",
        "report-path": report_path.as_posix(),
        "comment-url": comment_url,
    }


def write_runner_files(output_path: Path | None, summary_path: Path | None,
                       values: dict[str, str], summary: str) -> None:
    if output_path is not None:
        write_outputs(output_path, values)
    if summary_path is not None and append_step_summary(summary_path, summary):
        log("::notice title=turncheck::the step summary was cut to GitHub's 1 MiB limit")


def check_title(comparison: Comparison, reasons: list[str]) -> str:
    """The comment's heading, so the check and the comment say the same thing."""
    return comment_headline(comparison, reasons).title


def token_notes(bundle: ReportBundle, provenance: Provenance = VERIFIED) -> list[str]:
    notes = [f"live tokens spent: {bundle.live_tokens:,}"]
    pooled = pooled_note(bundle.earlier_attempts)
    if pooled is not None:
        notes.append(pooled)
    if not provenance.verified:  # where a fork's base came from is only its claim
        return [*notes, UNVERIFIED_BASELINE_NOTE]
    if bundle.baseline is not None and (bundle.baseline.source == "artifact"
                                        or bundle.baseline.rejected):
        notes.append(bundle.baseline.describe())
    return notes


HTML_ARTIFACT = "turncheck-html-report"
"""The artifact name our workflows (and `turncheck init`'s) upload the HTML report as."""

CHECK_SUMMARY_LIMIT = 16_000
"""The check run's summary is the brief form; its text carries the full detail."""


def write_html_report(job: Job, bundle: ReportBundle, comparison: Comparison,
                      reasons: list[str]) -> str | None:
    """The browsable report beside the JSON report (`report-path` with `.html`), for the
    workflow to upload as the `HTML_ARTIFACT` artifact; the artifact's name, if written.
    `reasons` (why the check fails) make its banner the comment's heading."""
    path = job.report_path.with_suffix(".html")
    html = render_report(head=bundle.head, base=bundle.base, comparison=comparison,
                         reasons=reasons, why_ran=bundle.reasons)
    try:
        write_text_confined(path, html, root=job.context.workspace)
    except OSError as exc:
        log(f"::warning title=turncheck::HTML report not written: "
            f"{escape_data(refusal_reason(exc))}")
        return None
    log(f"HTML report written to {job.inputs.report_path.with_suffix('.html')}")
    return HTML_ARTIFACT


def comment_context(job: Job, bundle: ReportBundle, reasons: list[str],
                    banner: str | None = None,
                    provenance: Provenance = VERIFIED,
                    html: str | None = None) -> CommentContext:
    workdir = path_prefix(bundle.working_directory)
    blob = (f"{job.context.server_url}/{bundle.repository}/blob/{bundle.head_sha}/"
            f"{quote(workdir, safe='/')}")
    return CommentContext(fail_reasons=reasons, head=bundle.head, base=bundle.base,
                          run_url=job.context.run_url, notes=token_notes(bundle, provenance),
                          reasons=bundle.reasons, blob_url=blob, banner=banner,
                          linkable=provenance.linkable, html_artifact=html)


def publish(job: Job, bundle: ReportBundle, nothing_changed: bool,
            provenance: Provenance = VERIFIED) -> int:
    verdict = bundle_verdict(job, bundle, provenance)
    comparison, reasons = verdict.comparison, verdict.reasons
    banner = None if provenance.verified else unverified_banner(provenance.source,
                                                                job.inputs.trusted_label)
    # An unverified (fork) report is posted from its JSON only: no page of it is vouched for.
    html = write_html_report(job, bundle, comparison, reasons) if provenance.verified else None
    context = comment_context(job, bundle, reasons, banner, provenance, html)
    items = only_linkable(collect_annotations(comparison, bundle.working_directory,
                                              bundle.head),
                          bundle.working_directory, provenance.linkable)
    print_annotations(items)
    published = Published()
    summary = render_summary(comparison, context)
    if bundle.pull_number is not None or bundle.event == "merge_group":
        api = job.api()
        if bundle.pull_number is not None:
            body = comment_markdown(comparison, context)
            # With nothing changed any more, only an earlier comment is updated (its old
            # verdict must go); no new comment is created.
            post_comment(api, bundle.pull_number, body, context.marker, job.inputs.comment,
                         published, create=not nothing_changed)
        title = check_title(comparison, reasons)  # the heading names a budget stop
        brief = comment_markdown(comparison, context, limit=CHECK_SUMMARY_LIMIT)
        if provenance.verified:
            post_check(api, bundle.head_sha, title, brief, bool(reasons), items,
                       job.context.run_url, published, text=summary,
                       incomplete=verdict.incomplete)
        else:
            post_check(api, bundle.head_sha, f"unverified: {title}", brief, bool(reasons),
                       items, job.context.run_url, published, text=summary,
                       name=UNVERIFIED_CHECK_NAME, verified=False)
            if not published.permission_denied:  # else a fork's read-only token
                hold_required_check(api, bundle.head_sha, job.inputs.trusted_label,
                                    job.context.run_url)
    explain_read_only(published, job.inputs.report_path)
    write_runner_files(job.context.output_path, job.context.summary_path,
                       outputs(comparison, job.inputs.report_path, published.comment_url),
                       summary)
    for reason in reasons:
        log(f"::error title=turncheck::{escape_data(reason)}")
    return verdict.exit_code
