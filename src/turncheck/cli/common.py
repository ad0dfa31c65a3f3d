"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import sys

from turncheck.formats.discovery import (
    DEFAULT_SAMPLE_GLOBS,
    DEFAULT_SUITE_GLOBS,
    Discovery,
    Globs,
    discover,
)
from turncheck.formats.suite import MAX_DEPTH


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit code 2."""


def add_discovery_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="files or directories to look in (default: .)",
    )
    parser.add_argument(
        "--suite-glob",
        action="append",
        metavar="GLOB",
        help=f"glob for suite files; repeatable (default: {', '.join(DEFAULT_SUITE_GLOBS)})",
    )
    parser.add_argument(
        "--sample-glob",
        action="append",
        metavar="GLOB",
        help=f"glob for sample files; repeatable (default: {', '.join(DEFAULT_SAMPLE_GLOBS)})",
    )
    parser.add_argument(
        "--max-depth",
        type=int,
        default=MAX_DEPTH,
        metavar="N",
        help=f"most nested follow-up levels allowed, 0..{MAX_DEPTH} (default: {MAX_DEPTH})",
    )


def globs_from(args: argparse.Namespace) -> Globs:
    return Globs(
        suites=tuple(args.suite_glob or DEFAULT_SUITE_GLOBS),
        samples=tuple(args.sample_glob or DEFAULT_SAMPLE_GLOBS),
    )


def discover_from(args: argparse.Namespace) -> Discovery:
    if not 0 <= args.max_depth <= MAX_DEPTH:
        raise UsageError(f"--max-depth must be between 0 and {MAX_DEPTH}, got {args.max_depth}")
    found = discover(args.paths, globs_from(args))
    if found.missing:
        raise UsageError(f"no such file or directory: {', '.join(found.missing)}")
    if found.unsupported:
        raise UsageError(
            f"not a suite (.yaml/.yml) or sample (.toml) file: {', '.join(found.unsupported)}"
        )
    return found


def usage_error(message: str) -> int:
    print(f"turncheck: error: {message}", file=sys.stderr)
    return 2
