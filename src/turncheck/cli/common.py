"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import os
import re
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TextIO

from turncheck.diagnostics import Diagnostic
from turncheck.formats.discovery import (
    DEFAULT_SAMPLE_GLOBS,
    DEFAULT_SUITE_GLOBS,
    Discovery,
    Globs,
    discover,
)
from turncheck.formats.suite import MAX_DEPTH
from turncheck.github.workflow import StopCommands

_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")


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
    if not found.files:
        globs = globs_from(args)
        print(f"turncheck: warning: no suite or sample file in {', '.join(args.paths)} "
              f"(globs: {', '.join(globs.suites + globs.samples)})", file=sys.stderr)
    return found


def usage_error(message: str) -> int:
    print(f"turncheck: error: {message}", file=sys.stderr)
    return 2


def one_line(text: str) -> str:
    """`text` on one line: control characters (line breaks included) as `\\xNN` escapes."""
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`file:line:col: severity: message`, always one line, whatever the file contained."""
    return one_line(diagnostic.compiler_style())


def untrusted_output(stream: TextIO) -> AbstractContextManager[object]:
    """Under GitHub Actions, stop workflow commands while file content or model output
    is printed to `stream` (a suite named `::error::…` must not run as a command)."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        return StopCommands(stream)
    return nullcontext()
