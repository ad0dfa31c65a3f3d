"""Tell GitHub: the sticky comment, the check run (or a commit status), outputs, summary.

Every write degrades gracefully: a read-only token (fork pull requests) is
reported in the log with what to do, and the results stay in the report file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from turncheck.compare.comparison import Comparison, Transition
from turncheck.diagnostics import Diagnostic
from turncheck.github.client import (
    Annotation,
    CheckConclusion,
    GitHubApi,
    GitHubApiError,
    GitHubPermissionError,
)
from turncheck.github.inputs import CommentMode
from turncheck.github.workflow import annotation_command, append_step_summary, write_outputs
from turncheck.render.console import usd

CHECK_NAME = "turncheck"
AnnotationLevel = Literal["notice", "warning", "failure"]
CommandLevel = Literal["error", "warning", "notice"]
STATUS_CONTEXT = "turncheck"


@dataclass
class Published:
    comment_url: str = ""
    check_url: str = ""
    permission_denied: list[str] = field(default_factory=list)


def log(message: str, stream: TextIO | None = None) -> None:
    print(message, file=stream or sys.stdout, flush=True)


def collect_annotations(comparison: Comparison, working_directory: str) -> list[Annotation]:
    """Validation problems and failing evals at file:line, repo-relative."""
    prefix = "" if working_directory in ("", ".") else working_directory.rstrip("/") + "/"
    found = [_diagnostic_annotation(d, prefix) for d in comparison.diagnostics]
    for suite in comparison.suites:
        for item in suite.evals:
            head = item.head
            if head is None or head.status.value == "pass" or item.line is None:
                continue
            message = item.label if item.transition is not Transition.NEW else head.status.value
            if item.error:
                message += f": {item.error}"
            found.append(Annotation(prefix + suite.path, item.line, item.line, "failure",
                                    f"eval {item.name!r} {message}", f"turncheck: {item.name}"))
    found += _calibration_annotations(comparison, prefix)
    return found


def _calibration_annotations(comparison: Comparison, prefix: str) -> list[Annotation]:
    """Samples the grader agreed with at base but not at head, at the sample's line."""
    found = []
    for item in comparison.calibration:
        for row in item.flipped:
            if not row.regression:
                continue
            now = row.head_error or f"scores {row.head_score}, label {row.label}"
            found.append(Annotation(prefix + item.path, row.line, row.line, "warning",
                                    f"sample {row.id!r}: the grader agreed at base, now {now}",
                                    f"turncheck: {row.id}"))
    return found


def _diagnostic_annotation(diagnostic: Diagnostic, prefix: str) -> Annotation:
    level: AnnotationLevel = "failure" if diagnostic.is_error else "warning"
    return Annotation(prefix + diagnostic.file, diagnostic.line, diagnostic.line, level,
                      diagnostic.message, f"turncheck: {diagnostic.code}")


def print_annotations(items: Iterable[Annotation]) -> None:
    """Also as workflow commands, so they show when no check run can be created."""
    for item in items:
        level: CommandLevel = "error" if item.annotation_level == "failure" else "warning"
        log(annotation_command(level, item.message, file=item.path, line=item.start_line,
                               title=item.title))


def post_comment(api: GitHubApi, number: int, body: str, marker: str, mode: CommentMode,
                 published: Published) -> None:
    if mode is CommentMode.NEVER:
        return
    try:
        result = api.upsert_comment(number, body, marker,
                                    "on-change" if mode is CommentMode.ON_CHANGE else "always")
    except GitHubPermissionError as exc:
        published.permission_denied.append(f"comment ({exc})")
        return
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not post the PR comment: {exc}")
        return
    published.comment_url = result.url
    log(f"PR comment {result.action}: {result.url}")


def post_check(api: GitHubApi, sha: str, title: str, summary: str, failed: bool,
               items: list[Annotation], run_url: str | None, published: Published) -> None:
    conclusion: CheckConclusion = "failure" if failed else "success"
    try:
        published.check_url = api.create_check_run(sha, CHECK_NAME, title, summary, "",
                                                    conclusion, items)
        log(f"check run: {published.check_url}")
        return
    except GitHubPermissionError as exc:
        log(f"no permission to create a check run ({exc}); setting a commit status instead")
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not create the check run: {exc}")
    try:
        api.create_status(sha, "failure" if failed else "success", title, STATUS_CONTEXT,
                          run_url)
    except GitHubPermissionError as exc:
        published.permission_denied.append(f"check run and commit status ({exc})")
    except GitHubApiError as exc:
        log(f"::warning title=turncheck::could not set the commit status: {exc}")


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
    counts = comparison.totals.counts
    head = comparison.totals.head
    cost = usd(None if head is None else head.total_cost_usd)
    verdict = "failed: " + "; ".join(reasons) if reasons else "passed"
    if not (comparison.suites or comparison.calibration or comparison.protocols):
        return f"no eval suite or sample file changed — {verdict}"
    return f"{counts.passed}/{counts.evals} evals pass, {cost} — {verdict}"
