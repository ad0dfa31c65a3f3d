"""`turncheck merge`: one report from the reports of shard jobs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turncheck.cli.common import UsageError, load_report, usage_error, write_json
from turncheck.engine.merge import MergeError, merge_reports
from turncheck.render import console


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="merge the JSON reports of `run --shard I/N` jobs into one",
        description="Merge shard reports (from `turncheck run --shard I/N --json ...`) into "
        "the report one unsharded run would have written. Fails, naming the report, when a "
        "shard is missing, duplicated or from another commit, price timestamp or plan.",
    )
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the merged report here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        named = [(str(path), load_report(path)) for path in args.reports]
        merged = merge_reports(named)
    except (UsageError, MergeError) as exc:
        return usage_error(str(exc)) if isinstance(exc, UsageError) else _merge_error(exc)
    console.summary(merged, sys.stdout)
    if args.json:
        write_json(args.json, merged)
    return 1 if merged.totals.failed or merged.totals.errors else 0


def _merge_error(exc: MergeError) -> int:
    print(f"turncheck: merge failed: {exc}", file=sys.stderr)
    return 1
