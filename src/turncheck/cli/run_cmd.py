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
from turncheck.engine.runner import run_suite_files
from turncheck.engine.sharding import ShardError, ShardSpec, select_shard
from turncheck.formats.suite import MAX_REPEAT
from turncheck.formats.suite_loader import SuiteFile
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.render import console
from turncheck.render.run_outcome import budget_stop_text, failure_reasons, success_text
from turncheck.report.run import Report, ShardInfo


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
    record.add_argument(
        "--prune", action="store_true",
        help="drop the recordings this run did not use (after a prompt change, the old "
        "answers), so the cassette's diff shows only what changed")
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
            console.print_failing(report, sys.stdout)
        if report.calibrations:
            from turncheck.render.calibration_console import print_calibrations

            print(file=sys.stdout)
            print_calibrations(report.calibrations, report.mode, sys.stdout, quiet)


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
    if settings.session.prune and args.shard is not None:
        raise UsageError("--prune cannot be used with --shard: a shard runs part of each "
                         "suite, so it would drop the recordings of the other shards' evals")
    validation.suites, shard = shard_of(args, validation.suites)
    total = sum(len(f.suite.evals) for f in validation.suites if f.suite is not None)
    total += sum(len(f.protocol.cases) for f in validation.suites if f.protocol is not None)
    progress = console.Progress(total, quiet=args.quiet)
    # Every shard finds the same sample files; the first one grades them.
    samples = validation.samples if shard is None or shard.index == 1 else []
    try:
        report = run_coroutine(
            run_suite_files(validation.suites, settings, validation.diagnostics, progress.advance,
                       samples=samples, on_case=progress.advance_case)
        )
    finally:
        progress.finish()
    return report.model_copy(update={"shard": shard})


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
        write_html(args.html, head=report)  # UsageError: exit 2, as for --json
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


def run_outcome(report: Report, validation: ValidationResult, problems: list[str]
                ) -> tuple[int, str]:
    """The exit code and the line that says why: what failed, else what stopped the run,
    else what passed."""
    invalid = {d.file for d in validation.diagnostics if d.is_error}
    reasons = failure_reasons(report, len(invalid), len(problems))
    if reasons:
        return 1, "Exit 1: " + "; ".join(reasons)
    if report.budget_stopped:
        return BUDGET_STOPPED_EXIT_CODE, (
            f"Exit {BUDGET_STOPPED_EXIT_CODE}: {budget_stop_text(report)}")
    return 0, f"Exit 0: {success_text(report)}"
