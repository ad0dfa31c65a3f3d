"""`turncheck estimate`: tokens and cost of a live run, expected and worst case."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turncheck.choices import PROVIDER_NAMES, provider_for
from turncheck.cli.common import (
    UsageError,
    add_discovery_options,
    discover_from,
    load_report,
    parse_vars,
    print_diagnostics,
    untrusted_output,
    usage_error,
    write_json,
)
from turncheck.engine.estimate import estimate
from turncheck.engine.pricing import Pricer
from turncheck.formats.validation import validate_files
from turncheck.render.estimate_view import console_lines


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="estimate the tokens and cost of a live run (expected and worst case)",
        description="Print, per suite and in total, the input/output tokens and cost of a "
        "live run: expected (from --history, a previous run report) and worst case (every "
        "follow-up fires, every answer reaches max_output_tokens). Sends nothing.",
    )
    add_discovery_options(parser)
    parser.add_argument("--history", type=Path, metavar="REPORT.json",
                        help="a previous run report of the same suites: expected figures")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the estimate here")
    parser.add_argument("--price-timestamp", metavar="ISO8601",
                        help="price at this instant (default: now)")
    parser.add_argument("--provider",
                        choices=PROVIDER_NAMES,
                        help="provider for every suite (default: from each suite's model id)")
    parser.add_argument("--base-url", metavar="URL",
                        help="the provider's base URL (without --provider: OpenAI-compatible)")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                        help="value for {{var('NAME')}}; repeatable")
    parser.set_defaults(handler=handle_estimate)


def handle_estimate(args: argparse.Namespace) -> int:
    try:
        found = discover_from(args)
        validation = validate_files(found.files, args.max_depth)
        history = load_report(args.history) if args.history is not None else None
        try:
            pricer = Pricer.at(args.price_timestamp)
        except ValueError:
            raise UsageError(f"--price-timestamp expects an ISO 8601 instant, "
                             f"got {args.price_timestamp!r}") from None
        result = estimate(
            validation.suites, pricer, history,
            history_name=None if args.history is None else str(args.history),
            provider=provider_for(args.provider, args.base_url),
            base_url=args.base_url, variables=parse_vars(args.var),
            sample_files=validation.samples,
        )
    except UsageError as exc:
        return usage_error(str(exc))
    print_diagnostics(validation.diagnostics)
    with untrusted_output(sys.stdout):
        for line in console_lines(result):
            print(line)
    if args.json:
        write_json(args.json, result)
    return 1 if any(d.is_error for d in validation.diagnostics) else 0
