"""`turncheck run` and `turncheck record`: run multi-turn evals and report."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from turncheck.cli.common import (
    BUDGET_STOPPED_EXIT_CODE,
    UsageError,
    add_discovery_options,
    add_provider_options,
    add_request_options,
    discover_from,
    interruptible_run,
    kept_files,
    print_diagnostics,
    print_problems,
    settings_from,
    untrusted_output,
    usage_error,
    write_html,
    write_json,
)
from turncheck.engine.interruption import STOP
from turncheck.engine.loop import run_coroutine
from turncheck.engine.repeats import RepeatSetting
from turncheck.engine.runner import run_suites
from turncheck.engine.sharding import ShardError, ShardSpec, select_shard
from turncheck.formats.suite import MAX_REPEAT
from turncheck.formats.suite_loader import SuiteFile
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.render import console
from turncheck.render.table_model import one_line, print_lines
from turncheck.report.run import Report, ShardInfo, Status


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="run eval suites (replayed from cassettes by default)",
        description="Run multi-turn eval suites. Default mode is replay: every provider call "
        "is answered from the suite's cassette, with no network and no API key.",
    )
    _add_run_options(run, with_mode=True)
    run.set_defaults(handler=handle_interruptible_run)
    record = subparsers.add_parser(
        "record",
        help="record missing provider calls into the suites' cassettes",
        description="Same as `run --mode record`: replay what is recorded, call the "
        "provider for the rest and append it to the cassette beside each suite.",
    )
    _add_run_options(record, with_mode=False)
    record.set_defaults(handler=handle_interruptible_run, mode="record")


def _add_run_options(parser: argparse.ArgumentParser, with_mode: bool) -> None:
    add_discovery_options(parser)
    add_provider_options(
        parser,
        with_mode=with_mode,
        concurrency_help="most evals running at once across all suites (default: 8)",
        provider_help="provider for every suite (default: from each suite's model id)",
    )
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="value for {{var('NAME')}}; repeatable",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="write the browsable HTML report here (see turncheck report)")
    add_request_options(parser)
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--repeat", type=repeat_setting, metavar="N|auto",
                        help="samples per eval and protocol case, or auto (adaptive); "
                        "overrides each suite's `repeat` (see docs/statistics.md)")
    parser.add_argument("--shard", metavar="I/N",
                        help="run only shard I of N (for matrix jobs; merge with turncheck merge)")


def repeat_setting(value: str) -> RepeatSetting:
    """`--repeat`: a whole number of samples (1..100) or `auto`."""
    if value.strip() == "auto":
        return "auto"
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"expected auto or a number 1..{MAX_REPEAT}, "
                                         f"not {value!r}")
    return count


def print_report(report: Report, quiet: bool) -> None:
    if not (report.suites or report.protocols or report.calibrations):
        return  # every file was invalid: the diagnostics say why, an empty table nothing
    # Suite and eval names and model output are untrusted: the summary table too.
    with untrusted_output(sys.stdout):
        if not quiet:
            console.transcript(report, sys.stdout)
        if report.protocols:  # their renderer loads only for a run that has protocol suites
            from turncheck.render import protocol_console

            if not quiet:
                protocol_console.transcript(report, sys.stdout)
            protocol_console.summary(report, sys.stdout)
        console.summary(report, sys.stdout)
        if quiet:  # no transcript above: which evals failed, one line each
            print_lines(failing_lines(report), sys.stdout)
        if report.calibrations:
            from turncheck.render.calibration_console import print_calibrations

            print(file=sys.stdout)
            print_calibrations(report.calibrations, report.mode, sys.stdout, quiet)


MAX_FAILING_LISTED = 50


def failing_lines(report: Report) -> list[str]:
    """`Failed:` and one line per failed eval or protocol case (errors have their own
    list in the summary), at most `MAX_FAILING_LISTED`."""
    fail_label = console.STATUS_LABEL[Status.FAIL]
    failed = [f"{suite.name} › {result.name} ({suite.path}:{result.line}): failed "
              + console.overall(result).removeprefix(f"{fail_label} (").replace(")", "", 1)
              for suite in report.suites for result in suite.evals
              if result.status is Status.FAIL]
    failed += [f"{suite.name} › {case.id} ({suite.path}): failed"
               for suite in report.protocols for case in suite.cases
               if case.status is Status.FAIL]
    if not failed:
        return []
    more = len(failed) - MAX_FAILING_LISTED
    shown = [f"  ❌ {one_line(text)}" for text in failed[:MAX_FAILING_LISTED]]
    return ["Failed:", *shown, *([f"  … and {more} more"] if more > 0 else [])]


def shard_of(
    args: argparse.Namespace, suites: list[SuiteFile]
) -> tuple[list[SuiteFile], ShardInfo | None]:
    if args.shard is None:
        return suites, None
    if args.price_timestamp is None:
        raise UsageError("--shard needs --price-timestamp so every shard prices alike "
                         "(for example the commit time: git show -s --format=%cI)")
    try:
        return select_shard(suites, ShardSpec.parse(args.shard))
    except ShardError as exc:
        raise UsageError(str(exc)) from None


def execute(args: argparse.Namespace, validation: ValidationResult) -> Report:
    settings = settings_from(args)
    validation.suites, shard = shard_of(args, validation.suites)
    total = sum(len(f.suite.evals) for f in validation.suites if f.suite is not None)
    total += sum(len(f.protocol.cases) for f in validation.suites if f.protocol is not None)
    progress = console.Progress(total, quiet=args.quiet)
    # Every shard finds the same sample files; the first one grades them.
    samples = validation.samples if shard is None or shard.index == 1 else []
    try:
        report = run_coroutine(
            run_suites(validation.suites, settings, validation.diagnostics, progress.advance,
                       samples=samples, on_case=progress.advance_case)
        )
    finally:
        progress.finish()
    return report.model_copy(update={"shard": shard})


def write_html_report(path: Path, report: Report) -> None:
    try:
        write_html(path, head=report)
    except UsageError as exc:
        print(f"turncheck: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None


def handle_interruptible_run(args: argparse.Namespace) -> int:
    outputs = {"--json": args.json, "--junit": args.junit, "--html": args.html}
    return interruptible_run(partial(handle_run, args),
                             kept=partial(kept_files, outputs, args.mode))


def load(args: argparse.Namespace) -> ValidationResult:
    """The suites and sample files found; on a signal, those loaded so far (the run
    then starts nothing and reports their evals interrupted)."""
    validation = ValidationResult()

    def discover_and_load() -> None:
        found = discover_from(args)
        validate_files(found.files, args.max_depth, result=validation)

    STOP.cut_short(discover_and_load)
    return validation


def write_report_files(args: argparse.Namespace, report: Report) -> None:
    if args.json:
        write_json(args.json, report)
    if args.junit:
        from turncheck.render.junit import write_junit

        write_junit(report, args.junit)


def handle_run(args: argparse.Namespace) -> int:
    try:
        validation = load(args)
        if validation.diagnostics and not STOP.requested:
            print_diagnostics(validation.diagnostics)
        with STOP.keeping():  # the run stops gracefully, and what it finished is written
            report = execute(args, validation)
            write_report_files(args, report)
    except UsageError as exc:
        return usage_error(str(exc))
    STOP.checkpoint()  # interrupted: one line (printed by the caller), nothing rendered
    print_report(report, args.quiet)
    if args.html:
        write_html_report(args.html, report)
    problems = calibration_problems(report)
    print_problems(problems)
    code, why = run_outcome(report, validation, problems)
    if not STOP.requested:  # else the interruption's own line is the last
        sys.stderr.flush()
        print(f"{why} · ran in {report.duration_s:.2f}s ({report.mode} mode)", flush=True)
    return code


def calibration_problems(report: Report) -> list[str]:
    if not report.calibrations:
        return []
    from turncheck.engine.calibration import calibration_problems as problems_of

    return problems_of(report.calibrations)


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def run_outcome(report: Report, validation: ValidationResult, problems: list[str]
                ) -> tuple[int, str]:
    """The exit code and the line that says why: what failed, else what stopped the run,
    else what passed."""
    invalid = {d.file for d in validation.diagnostics if d.is_error}
    totals = report.totals
    cases = [c for s in report.protocols for c in s.cases]
    bad_cases = sum(c.status in (Status.FAIL, Status.ERROR) for c in cases)
    failing = [
        f"{_counted(len(invalid), 'invalid file')}" if invalid else "",
        f"{totals.failed} of {_counted(totals.evals, 'eval')} failed" if totals.failed else "",
        f"{_counted(totals.errors, 'eval')} errored" if totals.errors else "",
        f"{bad_cases} of {_counted(len(cases), 'protocol case')} failed or errored"
        if bad_cases else "",
        f"{_counted(len(problems), 'grader calibration problem')} (above)" if problems else "",
    ]
    reasons = [reason for reason in failing if reason]
    if reasons:
        return 1, "Exit 1: " + "; ".join(reasons)
    if report.budget_stopped:
        return BUDGET_STOPPED_EXIT_CODE, (
            f"Exit {BUDGET_STOPPED_EXIT_CODE}: a budget stopped the run: "
            f"{_counted(totals.skipped, 'eval')} not run; nothing failed")
    ran = [_counted(totals.evals, "eval") if totals.evals else "",
           _counted(len(cases), "protocol case") if cases else "",
           _counted(sum(len(c.samples) for c in report.calibrations), "calibration sample")
           if report.calibrations else ""]
    done = ", ".join(part for part in ran if part)
    return 0, f"Exit 0: nothing failed ({done})" if done else "Exit 0: nothing ran"
