"""The `turncheck` command line: one module per subcommand under `turncheck.cli`.

Each subcommand module exposes `register(subparsers)`, which adds its parser and
sets `handler` (a function taking the parsed namespace and returning the exit
code). Exit codes: 0 success (also when there is nothing to do), 1 a problem
was found (invalid files, failing evals), 2 usage or configuration errors.

Options a user leaves unset are filled from the project configuration file
(`cli.config`) before the handler runs. A reader that closes the pipe early
(`turncheck run | head -1`) ends the command quietly, as Python's documentation
recommends: stdout is pointed at os.devnull and the exit code is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from turncheck import __version__
from turncheck.cli import (
    action_cmd,
    calibrate_cmd,
    compare_cmd,
    init_cmd,
    merge_cmd,
    run_cmd,
    schema_cmd,
    validate_cmd,
)
from turncheck.cli.common import print_diagnostics
from turncheck.cli.config import apply_project_config
from turncheck.config import ConfigError

COMMANDS = (
    validate_cmd, run_cmd, calibrate_cmd, compare_cmd, merge_cmd, action_cmd, schema_cmd,
    init_cmd,
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
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _to_devnull()
        return 1
    return code


def _dispatch(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if hasattr(args, "config_file"):
        try:
            apply_project_config(args)
        except ConfigError as exc:
            print_diagnostics(exc.diagnostics)
            return 2
    code: int = args.handler(args)
    return code


def _to_devnull() -> None:
    """Python's recipe for SIGPIPE: the unflushed output goes to os.devnull at exit
    instead of raising again; stderr too when it was the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        os.dup2(devnull, sys.stderr.fileno())
