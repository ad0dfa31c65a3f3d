"""The `turncheck` command line: one module per subcommand under `turncheck.cli`.

Each subcommand module exposes `register(subparsers)`, which adds its parser and
sets `handler` (a function taking the parsed namespace and returning the exit
code). Exit codes: 0 success, 1 a problem was found (invalid files, failing
evals), 2 usage errors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from turncheck import __version__
from turncheck.cli import (
    action_cmd,
    calibrate_cmd,
    compare_cmd,
    merge_cmd,
    run_cmd,
    schema_cmd,
    validate_cmd,
)

COMMANDS = (
    validate_cmd, run_cmd, calibrate_cmd, compare_cmd, merge_cmd, action_cmd, schema_cmd
)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus a hint), exit code 2, like the other usage errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"turncheck: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="turncheck",
        description="Multi-turn LLM evals for pull requests.",
    )
    parser.add_argument("--version", action="version", version=f"turncheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = args.handler(args)
    return code
