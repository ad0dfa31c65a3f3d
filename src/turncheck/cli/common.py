"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from turncheck.choices import MODES, PROVIDER_NAMES
from turncheck.cli.config import add_config_option
from turncheck.diagnostics import Diagnostic
from turncheck.formats.discovery import (
    DEFAULT_SAMPLE_GLOBS,
    DEFAULT_SUITE_GLOBS,
    Discovery,
    Globs,
    discover,
)
from turncheck.formats.files import read_bytes_bounded, refusal_reason, write_text_confined
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.vibecheck import missed_suites
from turncheck.github.workflow import StopCommands
from turncheck.text.counts import counted
from turncheck.text.lines import one_line as one_line  # also for diff_cmd

if TYPE_CHECKING:
    from pydantic import BaseModel

    # The engine (httpx, vcrpy, genai-prices) loads only for the commands that run evals.
    from turncheck.engine.settings import RunSettings
    from turncheck.formats.budget import BudgetLimits
    from turncheck.report.comparison import Comparison
    from turncheck.report.run import Report
    from turncheck.sides.options import RunOptions


# Exit code of `run`, `calibrate` and `validate` when they find nothing to do.
NOTHING_TO_DO = 0
# A `{{var('name')}}` name (as `formats.templates` reads it).
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit code 2."""


def add_discovery_options(parser: argparse.ArgumentParser) -> None:
    """PATHs, globs, excludes, `--max-depth` and `--config` (the configuration file's
    values fill what is not given here, see `cli.config`)."""
    parser.add_argument(
        "paths",
        nargs="*",
        default=None,
        metavar="PATH",
        help="files or directories to look in (default: the config's paths, else .)",
    )
    add_glob_options(parser)


def add_glob_options(parser: argparse.ArgumentParser) -> None:
    """The globs, excludes, `--max-depth` and `--config` of `add_discovery_options`."""
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
        "--exclude-glob",
        action="append",
        metavar="GLOB",
        help="skip files, or directories, that match; repeatable (default: none)",
    )
    parser.add_argument(
        "--max-depth",
        type=int,
        default=None,
        metavar="N",
        help=f"most nested follow-up levels allowed, 0..{MAX_DEPTH} (default: {MAX_DEPTH})",
    )
    add_config_option(parser)


def add_provider_options(
    parser: argparse.ArgumentParser, *, with_mode: bool, concurrency_help: str, provider_help: str
) -> None:
    """`--mode` (unless `with_mode` is false), `--concurrency`, `--provider`, `--base-url`."""
    if with_mode:
        parser.add_argument(
            "--mode",
            choices=MODES,
            default="replay",
            help="replay (default, offline), record (fill cassette gaps), live (no cassettes)",
        )
    parser.add_argument(
        "--concurrency", type=int, default=None, metavar="N", help=concurrency_help
    )
    parser.add_argument(
        "--provider", choices=PROVIDER_NAMES,
        help=provider_help
    )
    parser.add_argument(
        "--base-url", metavar="URL",
        help="the provider's base URL, e.g. http://127.0.0.1:8080/v1 (without --provider: an "
        "OpenAI-compatible server, as --provider openai)",
    )


def add_request_options(parser: argparse.ArgumentParser) -> None:
    """`--price-timestamp`, `--timeout` and `--attempts`."""
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
    add_budget_options(parser)


BUDGET_STOPPED_EXIT_CODE = 3
"""Exit code of a run a budget stopped (some eval skipped) where nothing failed."""


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """`--max-cost-usd` and `--max-live-tokens` (docs/budgets.md)."""
    parser.add_argument(
        "--max-cost-usd", type=float, metavar="USD",
        help="hard cap on the cost of live calls (model, judge, embeddings, graders); "
        "calls that could cross it are not sent and their evals end skipped (exit code 3)",
    )
    parser.add_argument(
        "--max-live-tokens", type=int, metavar="N",
        help="hard cap on the tokens (input + output) of live calls, likewise",
    )


def budget_from(args: argparse.Namespace) -> BudgetLimits:
    from turncheck.formats.budget import BudgetLimits

    cost, tokens = getattr(args, "max_cost_usd", None), getattr(args, "max_live_tokens", None)
    if cost is not None and not 0 <= cost < math.inf:
        raise UsageError(f"--max-cost-usd must be a non-negative number, got {cost:g}")
    if tokens is not None and tokens < 0:
        raise UsageError(f"--max-live-tokens must not be negative, got {tokens}")
    return BudgetLimits(max_cost_usd=cost, max_live_tokens=tokens)


def parse_vars(pairs: list[str]) -> dict[str, str]:
    variables = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--var expects NAME=VALUE, got {pair!r}")
        if not VAR_NAME.fullmatch(name):
            raise UsageError(f"--var {name!r}: a name is a letter or _ followed by letters, "
                             "digits, _, . or - (as in {{var('name')}})")
        variables[name] = value
    return variables


def warn_unused_vars(variables: Iterable[str], files: Iterable[Path]) -> None:
    """A warning for each `--var` that no file found refers to (a typo, or the wrong files)."""
    texts = []
    for path in files:
        try:
            texts.append(read_bytes_bounded(path).decode("utf-8", errors="replace"))
        except OSError:
            continue
    for name in variables:
        used = re.compile(r"\bvar\(\s*(['\"])" + re.escape(name) + r"\1\s*\)")
        if not any(used.search(text) for text in texts):
            print(one_line(f"turncheck: warning: --var {name} is not used: no file found "
                           f"refers to var('{name}')"), file=sys.stderr)


def settings_from(args: argparse.Namespace) -> RunSettings:
    """Run settings from the provider, request, `--repeat` and `--var` options."""
    return options_from(args).settings()


def options_from(args: argparse.Namespace) -> RunOptions:
    """What the provider, request, `--repeat` and `--var` options ask of a run."""
    from turncheck.sides.options import RunOptions

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
    return RunOptions(
        mode=args.mode,
        concurrency=args.concurrency,
        provider=args.provider,
        base_url=args.base_url,
        variables=parse_vars(args.var),
        env=dict(os.environ),
        price_timestamp=args.price_timestamp,
        timeout_s=args.timeout,
        attempts=args.attempts,
        budget=budget_from(args),
        repeat=getattr(args, "repeat", None),
        prune=getattr(args, "prune", False),
    )


def globs_from(args: argparse.Namespace) -> Globs:
    return Globs(
        suites=tuple(args.suite_glob or DEFAULT_SUITE_GLOBS),
        samples=tuple(args.sample_glob or DEFAULT_SAMPLE_GLOBS),
        excludes=tuple(args.exclude_glob or ()),
    )


def discover_from(args: argparse.Namespace) -> Discovery:
    if not 0 <= args.max_depth <= MAX_DEPTH:
        raise UsageError(f"--max-depth must be between 0 and {MAX_DEPTH}, got {args.max_depth}")
    found = discover(args.paths, globs_from(args))
    if found.missing:
        raise UsageError(f"no such file or directory: {', '.join(found.missing)}")
    if found.special:
        raise UsageError(f"not a regular file (a device, pipe or socket): "
                         f"{', '.join(found.special)}; name a suite or sample file or a directory")
    if found.unsupported:
        raise UsageError(
            f"not a suite (.yaml/.yml) or sample (.toml) file: {', '.join(found.unsupported)}"
        )
    variables = parse_vars(getattr(args, "var", None) or [])
    if not found.files:
        globs = globs_from(args)
        nothing_to_do(f"no suite or sample file in {', '.join(args.paths)} "
                      f"(globs: {', '.join(globs.suites + globs.samples)})"
                      + vibecheck_hint(args.paths, globs))
    elif hint := vibecheck_hint(args.paths, globs_from(args)):  # some found, others missed
        print(one_line("turncheck: warning: " + hint.removeprefix("; ")), file=sys.stderr)
    warn_unused_vars(variables, (f.path for f in found.files))
    return found


def vibecheck_hint(paths: Iterable[str], globs: Globs) -> str:
    """Where vibecheck-style suites the globs miss are, if any (a user coming from vibecheck)."""
    missed = [(Path(p) / found).as_posix() for p in paths if Path(p).is_dir()
              for found in missed_suites(Path(p), globs)]
    if not missed:
        return ""
    return (f"; {counted(len(missed), 'vibecheck-style suite')} such as {missed[0]} "
            f"{'is' if len(missed) == 1 else 'are'} not matched: "
            "run `turncheck init` or set suite-globs in turncheck.toml")


def nothing_to_do(reason: str) -> None:
    """The one message for a command with nothing to check, run or grade (exit code
    `NOTHING_TO_DO` in `run`, `calibrate` and `validate`)."""
    print(one_line(f"turncheck: warning: nothing to do: {reason}"), file=sys.stderr)


def interruptible_run(command: Callable[[], int], kept: Callable[[], str] | None = None) -> int:
    """`command()` with graceful SIGINT/SIGTERM (see `engine.interruption`): an
    interrupted command keeps its partial results, prints one line and exits 130/143.
    `kept()` says what was kept (which files), in that line."""
    from turncheck.engine.interruption import (
        PhaseInterrupted,
        interruptible,
        report_interruption,
    )

    with interruptible() as stop:
        try:
            with stop.phases():
                code = command()
        except PhaseInterrupted:
            code = stop.exit_code
    if not stop.requested:
        return code
    if kept is None:
        return report_interruption()
    print(one_line(f"turncheck: {stop.message()}; {kept()}"), file=sys.stderr)
    return stop.exit_code


def kept_files(outputs: dict[str, Path | None], mode: str) -> str:
    """What an interrupted command kept: `outputs` maps each output option (`--json`)
    to the file it names, if given; in record mode, the cassettes too."""
    given = [f"{path} ({option})" for option, path in outputs.items() if path is not None]
    report = (f"the partial report was kept in {', '.join(given)}" if given else
              f"no partial report was written (no {' / '.join(outputs)} given)")
    if mode == "record":
        return report + "; every completed recording was saved in its cassette"
    return report


def load_report(path: Path) -> Report:
    """The run report at `path` (`report/files.py`); UsageError when it is none."""
    from turncheck.report.files import ReportError, read_report
    from turncheck.report.run import Report

    try:
        return read_report(path, expect=Report)
    except ReportError as exc:
        raise UsageError(str(exc)) from None


def write_json(path: Path, document: BaseModel) -> None:
    """`document` (a run report, a comparison, an estimate) as JSON at `path`
    (`report/files.py`); UsageError when it cannot be written."""
    from turncheck.report.files import ReportError, write_report

    try:
        write_report(path, document)
    except ReportError as exc:
        raise UsageError(str(exc)) from None


def write_output(path: Path, text: str) -> None:
    """`text` at `path` (never through a symlink); UsageError when it cannot be written."""
    try:
        write_text_confined(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {refusal_reason(exc)}") from None


def write_html(path: Path, *, head: Report | None, base: Report | None = None,
               comparison: Comparison | None = None,
               reasons: Sequence[str] | None = None,
               why_ran: Mapping[str, Sequence[str]] | None = None) -> None:
    """The browsable HTML report (docs/html-report.md) at `path`; UsageError when it
    cannot be written. `reasons`: why the check fails (None: the default `fail-on`);
    `why_ran`: suite path → why it ran (a file it watches changed)."""
    from turncheck.render.html_report import render_report

    html = render_report(head=head, base=base, comparison=comparison, reasons=reasons,
                         why_ran=why_ran)
    try:
        write_text_confined(path, html)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {refusal_reason(exc)}") from None


def usage_error(message: str) -> int:
    print(f"turncheck: error: {message}", file=sys.stderr)
    return 2


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`file:line:col: severity: message`, always one line, whatever the file contained."""
    return one_line(diagnostic.compiler_style())


def print_diagnostics(diagnostics: Iterable[Diagnostic]) -> None:
    with untrusted_output(sys.stderr):
        for diagnostic in diagnostics:
            print(diagnostic_line(diagnostic), file=sys.stderr)


def print_problems(problems: Iterable[str]) -> None:
    """`turncheck: problem` lines on stderr, one line each."""
    with untrusted_output(sys.stderr):
        for problem in problems:
            print(one_line(f"turncheck: {problem}"), file=sys.stderr)


def untrusted_output(stream: TextIO) -> AbstractContextManager[object]:
    """Under GitHub Actions, stop workflow commands while file content or model output
    is printed to `stream` (a suite named `::error::…` must not run as a command)."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        return StopCommands(stream)
    return nullcontext()
