"""`turncheck diff [BASE_REF]`: what the action would say about the work tree, before
pushing. Runs the changed suites (or the paths given) at the base commit and in the work
tree at the same time, with the action's sampling (`repeat: auto` decided on both sides
together) and verdicts, and prints the comparison (`compare`'s console view, `--json`
and `--markdown`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from turncheck.cli.common import (
    NOTHING_TO_DO,
    UsageError,
    add_glob_options,
    add_provider_options,
    add_request_options,
    discover_from,
    globs_from,
    interruptible_run,
    nothing_to_do,
    one_line,
    print_diagnostics,
    settings_from,
    usage_error,
)
from turncheck.cli.compare_cmd import add_comparison_options, report_comparison
from turncheck.cli.run_cmd import repeat_setting
from turncheck.engine.interruption import STOP
from turncheck.engine.loop import run_coroutine
from turncheck.engine.runner import Side, run_both_sides
from turncheck.formats.discovery import FileKind
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.validation import validate_files
from turncheck.github import git
from turncheck.github.changes import SuiteChanges
from turncheck.github.checkout import Checkout
from turncheck.report.run import Report

DEFAULT_BRANCHES = ("origin/HEAD", "main", "master")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff", help="run the changed suites at a base commit and in the work tree, and compare",
        description="Run the suites the work tree changed since BASE_REF (or the PATHs "
        "given) at BASE_REF and in the work tree, at the same time, with the action's "
        "sampling and verdicts, and print the comparison: what the action would say.",
    )
    parser.add_argument("base_ref", nargs="?", default=None, metavar="BASE_REF",
                        help="commit to compare with (default: where HEAD left origin/HEAD, "
                        "else main, else master)")
    parser.add_argument("targets", nargs="*", default=[], metavar="PATH",
                        help="suite or sample files or directories to run on both sides "
                        "(default: the ones the work tree changed since BASE_REF)")
    add_glob_options(parser)
    add_provider_options(
        parser, with_mode=True,
        concurrency_help="most evals running at once per side; base and head share "
        "twice this (default: 8)",
        provider_help="provider for every suite (default: from each suite's model id)")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                        help="value for {{var('NAME')}}; repeatable")
    parser.add_argument("--repeat", type=repeat_setting, metavar="N|auto",
                        help="samples per eval and protocol case, or auto (adaptive, decided "
                        "on both sides together); overrides each suite's `repeat`")
    add_request_options(parser)
    add_comparison_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return interruptible_run(partial(diff, args))


def diff(args: argparse.Namespace) -> int:
    try:
        checkout, base_sha = checkout_from(args)
        changes = changes_from(args, checkout, base_sha)
        if changes.empty:
            nothing_to_do(f"no suite or sample file changed since {base_sha[:12]}")
            return NOTHING_TO_DO
        head, base = run_sides(args, checkout, base_sha, changes)
    except UsageError as exc:
        return usage_error(str(exc))
    if STOP.requested:
        return 1
    code = report_comparison(args, base, head, changes.renames, changes.removed)
    invalid = any(d.is_error for d in head.diagnostics)
    return max(code, 1 if invalid else 0)


def checkout_from(args: argparse.Namespace) -> tuple[Checkout, str]:
    here = Path.cwd()
    try:
        root = git.top_level(here)
        base_sha = base_commit(root, args.base_ref)
    except git.GitError as exc:
        raise UsageError(f"diff needs a git repository: {exc}") from None
    if not 0 <= args.max_depth <= MAX_DEPTH:
        raise UsageError(f"--max-depth must be between 0 and {MAX_DEPTH}, got {args.max_depth}")
    working_directory = here.resolve().relative_to(root.resolve())
    return Checkout(root, working_directory, globs_from(args), max_depth=args.max_depth), \
        base_sha


def base_commit(root: Path, ref: str | None) -> str:
    """The commit `ref` names; without one, where HEAD left the default branch."""
    if ref is not None:
        found = git.resolve(root, ref)
        if found is None:
            raise UsageError(f"BASE_REF {ref!r} names no commit in {root}")
        return found
    for branch in DEFAULT_BRANCHES:
        if git.resolve(root, branch) is not None:
            found = git.merge_base(root, branch, "HEAD")
            if found is not None:
                return found
    raise UsageError("no BASE_REF given and no origin/HEAD, main or master to start from: "
                     "name the commit to compare with")


def changes_from(args: argparse.Namespace, checkout: Checkout, base_sha: str) -> SuiteChanges:
    """The suites and sample files to run: the PATHs given (by the same names on both
    sides), else what the work tree changed since `base_sha`."""
    if not args.targets:
        return checkout.changes_among(git.worktree_changes(checkout.root, base_sha))
    found = discover_from(replace_paths(args, args.targets))
    changes = SuiteChanges()
    for file in found.files:
        try:
            relative = file.path.resolve().relative_to(checkout.workdir.resolve()).as_posix()
        except ValueError:
            raise UsageError(f"{file.path} is outside this directory: run diff from a "
                             "directory that holds it") from None
        target = changes.head_suites if file.kind is FileKind.SUITE else changes.samples
        target.append(relative)
        if file.kind is FileKind.SUITE:
            changes.base_suites.append(relative)
    return changes


def replace_paths(args: argparse.Namespace, paths: list[str]) -> argparse.Namespace:
    copied = argparse.Namespace(**vars(args))
    copied.paths = paths
    return copied


def run_sides(args: argparse.Namespace, checkout: Checkout, base_sha: str,
              changes: SuiteChanges) -> tuple[Report, Report]:
    settings = settings_from(args)
    settings.repeat = args.repeat
    # Both sides priced at one instant, as the action prices both at the head commit's.
    settings.price_timestamp = settings.price_timestamp or datetime.now(UTC).isoformat(
        timespec="seconds").replace("+00:00", "Z")
    files = checkout.found(changes.head_suites, FileKind.SUITE) + checkout.found(
        changes.samples, FileKind.SAMPLES)
    validation = validate_files(files, checkout.max_depth, root=checkout.workdir)
    if validation.diagnostics:
        print_diagnostics(validation.diagnostics)
    head = Side(validation.suites, settings, validation.diagnostics, validation.samples)
    # As in the action: the base never records into a throwaway copy of its cassettes.
    base_settings = replace(settings, mode="live" if settings.mode == "live" else "replay",
                            commit=base_sha)
    print(one_line(f"turncheck: diff against {base_sha[:12]}: "
                   f"{len(changes.head_suites)} suite(s), {len(changes.samples)} sample "
                   "file(s)"), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="turncheck-base-") as tmp:
        loaded = checkout.base_files(base_sha, changes.base_suites, changes.base_samples,
                                     Path(tmp), _warn)
        suites, samples = loaded or ([], [])
        head_report, base_report = run_coroutine(run_both_sides(
            head, Side(suites, base_settings, samples=samples), changes.renames))
    assert base_report is not None
    return head_report, base_report


def _warn(message: str) -> None:
    print(one_line("turncheck: warning: " + message.split("::", 2)[-1]), file=sys.stderr)
