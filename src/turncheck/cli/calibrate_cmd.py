"""`turncheck calibrate`: grade sample files with their graders and report agreement."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from turncheck.cli.common import (
    BUDGET_STOPPED_EXIT_CODE,
    NOTHING_TO_DO,
    UsageError,
    add_discovery_options,
    add_provider_options,
    add_request_options,
    discover_from,
    globs_from,
    interruptible_run,
    kept_files,
    nothing_to_do,
    print_diagnostics,
    print_problems,
    settings_from,
    untrusted_output,
    usage_error,
    write_json,
)
from turncheck.engine.calibration import calibration_problems
from turncheck.engine.interruption import STOP
from turncheck.engine.loop import run_coroutine
from turncheck.engine.runner import run_suite_files
from turncheck.formats.discovery import FileKind
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.render.budget_text import budget_lines
from turncheck.render.calibration_console import SampleProgress, print_calibrations
from turncheck.report.run import Report
from turncheck.text.counts import counted


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="grade sample files with their [grader] and report agreement with the labels",
        description="Grade every sample of each sample file with the file's [grader] and "
        "report exact agreement with the labels, mean absolute distance and per-sample "
        "rows. Default mode is replay: answers come from the cassette beside each sample "
        "file, with no network and no API key.",
    )
    add_discovery_options(parser)
    add_provider_options(
        parser,
        with_mode=True,
        concurrency_help="most grader calls at once (default: 8)",
        provider_help="provider for every grader (default: from each [grader])",
    )
    parser.add_argument(
        "--min-agreement", type=float, metavar="PERCENT",
        help="exit 1 when a file's agreement is below this (default: each grader's "
        "min_agreement, if any)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    add_request_options(parser)
    parser.add_argument("--quiet", action="store_true", help="print only the summary table")
    parser.set_defaults(handler=handle_interruptible_calibrate, var=[])


def handle_interruptible_calibrate(args: argparse.Namespace) -> int:
    return interruptible_run(partial(handle_calibrate, args),
                             kept=partial(kept_files, {"--json": args.json}, args.mode))


def _sample_files(args: argparse.Namespace) -> ValidationResult | None:
    found = discover_from(args)
    samples = [f for f in found.files if f.kind is FileKind.SAMPLES]
    if not samples:
        if found.files:
            nothing_to_do(f"no sample file in {', '.join(args.paths)} "
                          f"(globs: {', '.join(globs_from(args).samples)})")
        return None
    return validate_files(samples, args.max_depth)


def _grade(args: argparse.Namespace, validation: ValidationResult) -> Report:
    if args.min_agreement is not None and not 0 <= args.min_agreement <= 100:
        raise UsageError(f"--min-agreement must be a percentage from 0 to 100, "
                         f"got {args.min_agreement:g}")
    settings = settings_from(args)
    total = sum(len(f.samples) for f in validation.samples if f.grader is not None)
    progress = SampleProgress(total, sys.stderr)
    on_sample = None if args.quiet else progress.advance
    return run_coroutine(run_suite_files(
        [], settings, validation.diagnostics, samples=validation.samples, on_sample=on_sample
    ))


def handle_calibrate(args: argparse.Namespace) -> int:
    try:
        validation = _sample_files(args)
        if validation is None:
            return NOTHING_TO_DO
        print_diagnostics(validation.diagnostics)
        with STOP.keeping():  # the grading stops gracefully, and what it finished is written
            report = _grade(args, validation)
            if args.json:
                write_json(args.json, report)
    except UsageError as exc:
        return usage_error(str(exc))
    STOP.checkpoint()  # interrupted: one line (printed by the caller), nothing rendered
    with untrusted_output(sys.stdout):
        print_calibrations(report.calibrations, report.mode, sys.stdout, args.quiet)
    source = report.price_source
    print(f"Prices: {source.library} {source.version} at {source.timestamp}")
    for line in budget_lines(report):
        print(line)
    problems = calibration_problems(report.calibrations, args.min_agreement)
    print_problems(problems)
    code, why = calibrate_outcome(report, validation, problems)
    if not STOP.requested:  # else the interruption's own line is the last
        sys.stderr.flush()
        print(f"{why} · {report.mode} mode", flush=True)
    return code


def calibrate_outcome(report: Report, validation: ValidationResult, problems: list[str]
                      ) -> tuple[int, str]:
    """The exit code and the line that says why, as `run` ends."""
    invalid = len({d.file for d in validation.diagnostics if d.is_error})
    reasons = [counted(invalid, "invalid file") if invalid else "",
               f"{counted(len(problems), 'grader calibration problem')} (above)"
               if problems else ""]
    if any(reasons):
        return 1, "Exit 1: " + "; ".join(reason for reason in reasons if reason)
    graded = sum(len(result.samples) for result in report.calibrations)
    if report.budget_stopped:
        return BUDGET_STOPPED_EXIT_CODE, (f"Exit {BUDGET_STOPPED_EXIT_CODE}: a budget stopped "
                                          f"the grading after {counted(graded, 'sample')}; "
                                          "nothing failed")
    return 0, f"Exit 0: nothing failed ({counted(graded, 'sample')} graded)"
