"""Tell GitHub: the sticky comment, the check run (or a commit status), outputs, summary.

Every write degrades gracefully: a read-only token (fork pull requests) is
reported in the log with what to do, and the results stay in the report file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal, TextIO

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
from turncheck.render.comment import comment_headline
from turncheck.render.severity import TITLE, Group, case_change, eval_change, eval_group
from turncheck.report.comparison import Comparison, EvalComparison
from turncheck.report.run import EvalResult, Report, Status, TurnResult

CHECK_NAME = "turncheck"
AnnotationLevel = Literal["notice", "warning", "failure"]
CommandLevel = Literal["error", "warning", "notice"]
STATUS_CONTEXT = "turncheck"
ANNOTATED_GROUPS = (Group.REGRESSION, Group.BROKEN, Group.LIKELY_REGRESSION,
                    Group.LATER_TURN, Group.ERROR)
ANNOTATION_TITLE = {Group.ERROR: "errors"}
"""Short annotation titles where the comment's group title is long."""
VERDICT_EXTERNAL_ID = "turncheck-verdict"
"""Marks check runs turncheck created from a trusted run's own results. A fork's job
may be *named* `turncheck` too, but a fork's read-only token cannot create check runs."""


@dataclass
class Published:
    comment_url: str = ""
    check_url: str = ""
    permission_denied: list[str] = field(default_factory=list)


def log(message: str, stream: TextIO | None = None) -> None:
    print(message, file=stream or sys.stdout, flush=True)


def collect_annotations(comparison: Comparison, working_directory: str,
                        head: Report | None = None) -> list[Annotation]:
    """Validation problems, regressions (turn-of-pass shifts included, naming the check
    that failed and its turn) and failing evals at file:line, repo-relative."""
    prefix = path_prefix(working_directory)
    found = [_diagnostic_annotation(d, prefix) for d in comparison.diagnostics]
    results = {(s.path, e.name): e for s in head.suites for e in s.evals} if head else {}
    for suite in comparison.suites:
        for item in suite.evals:
            annotation = _eval_annotation(item, prefix + suite.path,
                                          results.get((suite.path, item.name)))
            if annotation is not None:
                found.append(annotation)
    found += _case_annotations(comparison, head, prefix)
    found += _calibration_annotations(comparison, prefix)
    return found


def path_prefix(working_directory: str) -> str:
    """What turns a path relative to the working directory into a repository path."""
    return "" if working_directory in ("", ".") else working_directory.rstrip("/") + "/"


def only_linkable(items: list[Annotation], working_directory: str,
                  linkable: frozenset[str] | None) -> list[Annotation]:
    """An untrusted report's annotations at the commit's own files only."""
    if linkable is None:
        return items
    prefix = path_prefix(working_directory)
    return [a for a in items if a.path.startswith(prefix)
            and a.path.removeprefix(prefix) in linkable]


def _case_annotations(comparison: Comparison, head: Report | None,
                      prefix: str) -> list[Annotation]:
    """Protocol cases with a regression verdict, at the case's line (in the suite file, or
    in its cases file)."""
    if comparison.protocols is None:
        return []
    cases_files = {p.path: p.cases_file for p in head.protocols} if head else {}
    found = []
    for suite in comparison.protocols.suites:
        cases_file = cases_files.get(suite.path)
        path = suite.path if cases_file is None else \
            (PurePosixPath(suite.path).parent / cases_file).as_posix()
        for case in suite.cases:
            group = eval_group(case)
            if case.line is None or group not in ANNOTATED_GROUPS or group is Group.ERROR:
                continue
            found.append(Annotation(prefix + path, case.line, case.line, "failure",
                                    f"protocol case {case.id!r} {case_change(case)}",
                                    f"turncheck: {_annotation_title(group)}: {case.id}"))
    return found


def _annotation_title(group: Group) -> str:
    return ANNOTATION_TITLE.get(group, TITLE[group].lower())


def _eval_annotation(item: EvalComparison, path: str,
                     result: EvalResult | None) -> Annotation | None:
    group = eval_group(item)
    failing = item.head is not None and item.head.status in (Status.FAIL, Status.ERROR)
    if item.line is None or not (failing or group in ANNOTATED_GROUPS):
        return None
    message = f"eval {item.name!r} {eval_change(item)}"
    first_failure = _first_failed_check(result)
    if first_failure:
        message += f"; {first_failure}"
    level: AnnotationLevel = "failure" if group in ANNOTATED_GROUPS or failing else "warning"
    line = _failed_turn_line(result) or item.line
    return Annotation(path, line, line, level, message,
                      f"turncheck: {_annotation_title(group)}: {item.name}")


def _failed_turn(result: EvalResult | None) -> list[TurnResult]:
    """Scripted turns: the turn that failed first; otherwise every turn."""
    if result is None:
        return []
    failed = [t for t in result.turns if t.turn == result.failed_on_turn]
    return failed or list(result.turns)


def _failed_turn_line(result: EvalResult | None) -> int | None:
    """Scripted turns: the line of the prompt of the turn that failed first."""
    if result is None or result.failed_on_turn is None:
        return None
    return next((t.line for t in _failed_turn(result) if t.line is not None), None)


def _first_failed_check(result: EvalResult | None) -> str | None:
    for turn in _failed_turn(result):
        for check in turn.checks:
            if not check.passed:
                why = f" ({check.error})" if check.error else ""
                return f"turn {turn.turn}: check {check.detail} failed{why}"
    return None


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
