"""A bundle's verdict, told to GitHub: the comparison, the comment, the check run, the
HTML report, annotations, outputs and the step summary (every flow that ends with a
comparison publishes through here)."""

from __future__ import annotations

from urllib.parse import quote

from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import fail_reasons, incomplete
from turncheck.formats.files import refusal_reason, write_text_confined
from turncheck.github.job import Job
from turncheck.github.publish import (
    Published,
    check_title,
    collect_annotations,
    explain_read_only,
    log,
    only_linkable,
    outputs,
    path_prefix,
    post_check,
    post_comment,
    print_annotations,
    write_runner_files,
)
from turncheck.github.trust import (
    UNVERIFIED_BASELINE_NOTE,
    UNVERIFIED_CHECK_NAME,
    VERIFIED,
    Provenance,
    hold_required_check,
    unverified_banner,
)
from turncheck.github.workflow import escape_data
from turncheck.render.comment import CommentContext, render_comment, render_summary
from turncheck.render.html_report import render_report
from turncheck.report.bundle import ReportBundle
from turncheck.report.comparison import Comparison


def compare_bundle(job: Job, bundle: ReportBundle, provenance: Provenance = VERIFIED
                   ) -> Comparison:
    """The bundle's comparison; against a pooled base when our own job pooled it (a
    fork's claim of a pool is not believed: its base is compared as one run)."""
    pool = bundle.baseline.pool if bundle.baseline is not None and provenance.verified \
        else None
    return compare_reports(bundle.base, bundle.head, renames=bundle.renames,
                           removed=bundle.removed, thresholds=job.thresholds(),
                           base_pool=pool)


def token_notes(bundle: ReportBundle, provenance: Provenance = VERIFIED) -> list[str]:
    notes = [f"live tokens spent: {bundle.live_tokens:,}"]
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
                         reasons=reasons)
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
    comparison = compare_bundle(job, bundle, provenance)
    reasons = fail_reasons(comparison, job.inputs.fail_on,
                           calibration=job.calibration_thresholds())
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
            body = render_comment(comparison, context)
            # With nothing changed any more, only an earlier comment is updated (its old
            # verdict must go); no new comment is created.
            post_comment(api, bundle.pull_number, body, context.marker, job.inputs.comment,
                         published, create=not nothing_changed)
        title = check_title(comparison, reasons)  # the heading names a budget stop
        brief = render_comment(comparison, context, limit=CHECK_SUMMARY_LIMIT)
        if provenance.verified:
            post_check(api, bundle.head_sha, title, brief, bool(reasons), items,
                       job.context.run_url, published, text=summary,
                       incomplete=incomplete(comparison))
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
    return 1 if reasons else 0
