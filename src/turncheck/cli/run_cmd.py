"""`turncheck run` and `turncheck record`: run multi-turn evals and report."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from datetime import datetime
from pathlib import Path

from turncheck.cli.common import (
    UsageError,
    add_discovery_options,
    diagnostic_line,
    discover_from,
    one_line,
    untrusted_output,
    usage_error,
)
from turncheck.engine.calibration import calibration_problems
from turncheck.engine.report import Report, ShardInfo
from turncheck.engine.runner import RunSettings, run_suites
from turncheck.engine.session import SessionSettings
from turncheck.engine.sharding import ShardError, ShardSpec, select_shard
from turncheck.formats.suite_loader import SuiteFile
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.render import console, protocol_console
from turncheck.render.calibration_console import print_calibrations
from turncheck.render.junit import write_junit


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="run eval suites (replayed from cassettes by default)",
        description="Run multi-turn eval suites. Default mode is replay: every provider call "
        "is answered from the suite's cassette, with no network and no API key.",
    )
    _add_run_options(run, with_mode=True)
    run.set_defaults(handler=handle_run)
    record = subparsers.add_parser(
        "record",
        help="record missing provider calls into the suites' cassettes",
        description="Same as `run --mode record`: replay what is recorded, call the "
        "provider for the rest and append it to the cassette beside each suite.",
    )
    _add_run_options(record, with_mode=False)
    record.set_defaults(handler=handle_run, mode="record")


def _add_run_options(parser: argparse.ArgumentParser, with_mode: bool) -> None:
    add_discovery_options(parser)
    if with_mode:
        parser.add_argument(
            "--mode",
            choices=("replay", "record", "live"),
            default="replay",
            help="replay (default, offline), record (fill cassette gaps), live (no cassettes)",
        )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="most evals running at once across all suites (default: 8)",
    )
    parser.add_argument(
        "--provider",
        choices=("openrouter", "openai", "anthropic"),
        help="provider for every suite (default: from each suite's model id)",
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="OpenAI-compatible base URL (implies --provider openai)"
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
    parser.add_argument(
        "--price-timestamp",
        metavar="ISO8601",
        help="price every call at this instant (default: now)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="per-request timeout (default: 60)",
    )
    parser.add_argument(
        "--attempts",
        type=int,
        default=4,
        metavar="N",
        help="attempts per request, retries included (default: 4)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--shard", metavar="I/N",
                        help="run only shard I of N (for matrix jobs; merge with turncheck merge)")


def parse_vars(pairs: list[str]) -> dict[str, str]:
    variables = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--var expects NAME=VALUE, got {pair!r}")
        variables[name] = value
    return variables


def settings_from(args: argparse.Namespace) -> RunSettings:
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.attempts < 1 or not (0 < args.timeout < math.inf):
        raise UsageError("--attempts must be at least 1 and --timeout positive")
    if args.price_timestamp is not None:
        try:
            datetime.fromisoformat(args.price_timestamp.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                "--price-timestamp expects an ISO 8601 instant such as 2025-01-01T00:00:00Z, "
                f"got {args.price_timestamp!r}"
            ) from None
    return RunSettings(
        mode=args.mode,
        concurrency=args.concurrency,
        provider="openai" if args.base_url and not args.provider else args.provider,
        base_url=args.base_url,
        variables=parse_vars(args.var),
        env=dict(os.environ),
        price_timestamp=args.price_timestamp,
        session=SessionSettings(timeout_s=args.timeout, attempts=args.attempts),
    )


def print_report(report: Report, quiet: bool) -> None:
    # Suite and eval names and model output are untrusted: the summary table too.
    with untrusted_output(sys.stdout):
        if not quiet:
            console.transcript(report, sys.stdout)
            protocol_console.transcript(report, sys.stdout)
        protocol_console.summary(report, sys.stdout)
        console.summary(report, sys.stdout)
        if report.calibrations:
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
    validation.suites, shard = shard_of(args, validation.suites)
    total = sum(len(f.suite.evals) for f in validation.suites if f.suite is not None)
    total += sum(len(f.protocol.cases) for f in validation.suites if f.protocol is not None)
    progress = console.Progress(total)
    # Every shard finds the same sample files; the first one grades them.
    samples = validation.samples if shard is None or shard.index == 1 else []
    try:
        report = asyncio.run(
            run_suites(validation.suites, settings, validation.diagnostics, progress.advance,
                       samples=samples, on_case=progress.advance_case)
        )
    finally:
        progress.finish()
    return report.model_copy(update={"shard": shard})


def handle_run(args: argparse.Namespace) -> int:
    try:
        found = discover_from(args)
        validation = validate_files(found.files, args.max_depth)
        if validation.diagnostics:
            with untrusted_output(sys.stderr):
                for diagnostic in validation.diagnostics:
                    print(diagnostic_line(diagnostic), file=sys.stderr)
        report = execute(args, validation)
    except UsageError as exc:
        return usage_error(str(exc))
    print_report(report, args.quiet)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.junit:
        write_junit(report, args.junit)
    invalid = any(d.is_error for d in validation.diagnostics)
    problems = calibration_problems(report.calibrations)
    with untrusted_output(sys.stderr):
        for problem in problems:
            print(one_line(f"turncheck: {problem}"), file=sys.stderr)
    failed = report.totals.failed or report.totals.errors or protocol_console.failed(report)
    return 1 if invalid or problems or failed else 0
