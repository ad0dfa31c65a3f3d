"""Annotations at file:line: validation problems, regressions, failing evals, protocol
cases and calibration samples, for the check run and as workflow commands."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Literal

from turncheck.diagnostics import Diagnostic
from turncheck.github.client import Annotation
from turncheck.github.workflow import annotation_command, log
from turncheck.render.severity import TITLE, Group, change_with_evidence, eval_group, row_change
from turncheck.report.comparison import Comparison, EvalComparison
from turncheck.report.results import Status, TurnResult
from turncheck.report.run import EvalResult, Report

AnnotationLevel = Literal["notice", "warning", "failure"]
CommandLevel = Literal["error", "warning", "notice"]
ANNOTATED_GROUPS = (Group.REGRESSION, Group.BROKEN, Group.LIKELY_REGRESSION,
                    Group.LATER_TURN, Group.ERROR)
ANNOTATION_TITLE = {Group.ERROR: "errors"}
"""Short annotation titles where the comment's group title is long."""


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
                                    f"protocol case {case.id!r} {change_with_evidence(case)}",
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
    message = f"eval {item.name!r} {row_change(item)}"
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
