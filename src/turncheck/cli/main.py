"""The `turncheck` command line: one module per subcommand under `turncheck.cli`.

Each subcommand module exposes `register(subparsers)`, which adds its parser and
sets `handler` (a function taking the parsed namespace and returning the exit
code). Exit codes: 0 success (also when there is nothing to do), 1 a problem
was found (invalid files, failing evals), 2 usage or configuration errors, 3 a
budget stopped the run and nothing else failed (docs/budgets.md).

Options a user leaves unset are filled from the project configuration file
(`cli.config`) before the handler runs. A reader that closes the pipe early
(`turncheck run | head -1`) ends the command quietly, as Python's documentation
recommends: stdout is pointed at os.devnull and the exit code is 1.

Start-up: only the module of the command being run is imported (`COMMANDS`
names each command's module and its one-line help), so `validate` never loads
the engine, PyGithub, vcrpy or genai-prices, and `--help` loads no command at
all. To add a command, add its module and a `Command` line here.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from turncheck._version import __version__
from turncheck.gc_pause import gc_paused


@dataclass(frozen=True)
class Command:
    name: str
    module: str
    """`turncheck.cli.<module>`; its `register` adds this command's parser."""
    help: str
    """The one line shown by `turncheck --help` (the module's own help, repeated)."""


COMMANDS = (
    Command("validate", "validate_cmd", "check suite (YAML) and sample (TOML) files"),
    Command("run", "run_cmd", "run eval suites (replayed from cassettes by default)"),
    Command("record", "run_cmd", "record missing provider calls into the suites' cassettes"),
    Command(
        "calibrate",
        "calibrate_cmd",
        "grade sample files with their [grader] and report agreement with the labels",
    ),
    Command("compare", "compare_cmd", "compare a head run report with its base"),
    Command("diff", "diff_cmd",
            "run the changed suites at a base commit and in the work tree, and compare"),
    Command("report", "report_cmd", "write the browsable HTML report of a JSON report"),
    Command("merge", "merge_cmd", "merge the JSON reports of `run --shard I/N` jobs into one"),
    Command(
        "action",
        "action_cmd",
        "run as the GitHub Action (pull_request, workflow_run or push events)",
    ),
    Command("schema", "schema_cmd", "print the JSON Schema of suite files"),
    Command("init", "init_cmd",
            "write the GitHub workflows, a starter suite and turncheck.toml"),
    Command("estimate", "estimate_cmd",
            "estimate the tokens and cost of a live run (expected and worst case)"),
)


INVALID_CHOICE = re.compile(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$")
UNRECOGNIZED = "unrecognized arguments: "


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus a hint), exit code 2, like the other usage errors."""

    command: str | None = None
    """The subcommand being parsed (`run`), so an error points at its own `--help`."""

    def error(self, message: str) -> NoReturn:
        hint = self.suggestion(message)
        prog = f"turncheck {self.command}" if self.command else self.prog
        self.exit(2, f"turncheck: error: {message}{hint} (see `{prog} --help`)\n")

    def suggestion(self, message: str) -> str:
        """`; did you mean validate?` for a value close to one of the choices,
        `; did you mean --json?` for an unrecognized option close to a known one."""
        choice = INVALID_CHOICE.search(message)
        if choice is not None:
            choices = [c.strip().strip("'") for c in choice.group(2).split(",")]
            return did_you_mean(choice.group(1), choices)
        if not message.startswith(UNRECOGNIZED):
            return ""
        typed = [a.split("=")[0] for a in message.removeprefix(UNRECOGNIZED).split()
                 if a.startswith("--")]
        known = self.option_strings()
        hints = [did_you_mean(option, known) for option in typed]
        return next((hint for hint in hints if hint), "") or (
            self.elsewhere(typed[0]) if typed else "")

    def option_strings(self) -> list[str]:
        """Every long option of this parser and of its (registered) subcommands."""
        options = []
        for action in self._actions:
            options += [o for o in action.option_strings if o.startswith("--")]
            if isinstance(action, argparse._SubParsersAction):
                for parser in action.choices.values():
                    options += [o for a in parser._actions for o in a.option_strings
                                if o.startswith("--")]
        return options

    def elsewhere(self, typed: str) -> str:
        """`; --cost-threshold-usd is an option of turncheck compare and diff`: the close
        options other commands have, when this command has none."""
        if self.command is None:
            return ""
        found: dict[str, list[str]] = {}
        for name, parser in _subcommands(build_parser(None)).items():
            if name == self.command:
                continue
            options = [o for a in parser._actions for o in a.option_strings
                       if o.startswith("--")]
            for option in difflib.get_close_matches(typed, options, n=1):
                found.setdefault(option, []).append(name)
        if not found:
            return ""
        said = [f"{option} is an option of turncheck {' and '.join(names)}"
                for option, names in list(found.items())[:2]]
        return f"; `turncheck {self.command}` has no {typed}; " + "; ".join(said)


def did_you_mean(typed: str, known: Sequence[str]) -> str:
    """`; did you mean A?` when `typed` is close to something known (shown unquoted)."""
    from turncheck.text.suggest import did_you_mean as suggest

    return suggest(typed, dict.fromkeys(known), show=str)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def chosen_command(argv: Sequence[str]) -> Command | None:
    """The command named by the first argument that is not an option, if it is one."""
    for argument in argv:
        if argument == "--":
            return None
        if not argument.startswith("-"):
            return next((c for c in COMMANDS if c.name == argument), None)
    return None


def register_command(
    subparsers: argparse._SubParsersAction[Any], command: Command
) -> None:
    """Import the command's module and let it add its parser(s)."""
    module = importlib.import_module(f"turncheck.cli.{command.module}")
    module.register(subparsers)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the chosen command's full parser, the others as help lines.

    With `argv` None every command is registered in full (slow; for tests and docs).
    """
    parser = _Parser(
        prog="turncheck",
        description="Multi-turn LLM evals for pull requests.",
    )
    parser.add_argument("--version", action="version", version=f"turncheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else chosen_command(argv)
    parser.command = None if chosen is None else chosen.name
    for command in COMMANDS:
        if command.name in subparsers.choices:
            continue  # registered with another command of its module
        if argv is None or (chosen is not None and command.module == chosen.module):
            register_command(subparsers, command)
        else:
            subparsers.add_parser(command.name, help=command.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            code = _dispatch(argv)
        finally:  # also after `--help`, which leaves through SystemExit
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            if argv is None:  # the process exits next: its last collections need not
                gc.freeze()  # scan the run's heap (0.1-0.5 s after a 3,000-eval run)
    except BrokenPipeError:
        _to_devnull()
        return 1
    except KeyboardInterrupt:  # Ctrl-C while the command's modules load: no traceback
        return interrupted()
    return code


def interrupted() -> int:
    print("turncheck: interrupted", file=sys.stderr)
    return 130


def _dispatch(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    with gc_paused():  # importing the command's modules allocates only long-lived objects
        parser = build_parser(arguments)
    if argv is None:  # the process is the CLI (not a test calling main)
        gc.freeze()  # ... which later collections need not scan again
    args, extras = parser.parse_known_args(arguments)
    if extras and not _paths_after_options(args, extras):
        parser.parse_args(arguments)  # reports the unrecognized arguments as usual
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if hasattr(args, "config_file") and not _configured(args):
        return 2
    from turncheck.cli.common import UsageError, usage_error  # each command imports it

    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:  # Ctrl-C outside a run (which handles it gracefully)
        return interrupted()
    except UsageError as exc:  # e.g. a report that cannot be written
        return usage_error(str(exc))
    return code


def _paths_after_options(args: argparse.Namespace, extras: list[str]) -> bool:
    """`turncheck diff main --json out.json a.eval.yaml`, `run a.yaml --quiet b.yaml`:
    argparse takes a command's positionals in one stretch; PATHs after an option join
    the ones before it."""
    field = next((name for name in ("targets", "paths") if hasattr(args, name)), None)
    if field is None or any(extra.startswith("-") for extra in extras):
        return False
    setattr(args, field, [*(getattr(args, field) or []), *extras])
    return True


def _configured(args: argparse.Namespace) -> bool:
    """Fill unset options from the project configuration; False (reported) when invalid."""
    from turncheck.cli.common import print_diagnostics
    from turncheck.cli.config import apply_project_config
    from turncheck.config import ConfigError

    try:
        apply_project_config(args)
    except ConfigError as exc:
        print_diagnostics(exc.diagnostics)
        return False
    return True


def _to_devnull() -> None:
    """Python's recipe for SIGPIPE: the unflushed output goes to os.devnull at exit
    instead of raising again; stderr too when it was the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        os.dup2(devnull, sys.stderr.fileno())
