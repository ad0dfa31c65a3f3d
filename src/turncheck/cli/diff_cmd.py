"""`turncheck diff [BASE_REF]`: what the action would say about the work tree, before
pushing. Runs the changed suites (or the paths given) at the base commit — in a work
tree of it — and in the work tree at the same time, through the action's two-commit
runner (`sides.two_commit_runner`: its sampling, `repeat: auto` decided on both sides together,
and pricing), and prints the comparison (`compare`'s console view, `--json` and
`--markdown`)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from turncheck import git
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
    options_from,
    print_diagnostics,
    usage_error,
)
from turncheck.cli.compare_cmd import add_comparison_options, report_comparison
from turncheck.cli.run_cmd import repeat_setting
from turncheck.engine.interruption import STOP
from turncheck.engine.loop import run_coroutine
from turncheck.engine.runner import run_suite_files
from turncheck.formats.discovery import FileKind
from turncheck.formats.suite import MAX_DEPTH
from turncheck.report.run import Report
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.checkout import Checkout
from turncheck.sides.two_commit_runner import Commits, Event, SideLoaded, TwoCommitRun
from turncheck.text.counts import counted
from turncheck.text.lines import one_line

DEFAULT_BRANCHES = ("origin/HEAD", "main", "master")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff", help="run the changed suites at a base commit and in the work tree, and compare",
        description="Run the suites the work tree changed since BASE_REF (or the PATHs "
        "given) at BASE_REF (in a temporary work tree of it) and in the work tree, at the "
        "same time, with the action's sampling and verdicts, and print the comparison: "
        "what the action would say.",
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


NOTHING_KEPT = "nothing was written: diff compares two finished runs, so it keeps no partial one"


def handle(args: argparse.Namespace) -> int:
    return interruptible_run(partial(diff, args), kept=lambda: NOTHING_KEPT)


def diff(args: argparse.Namespace) -> int:
    try:
        checkout, commits = checkout_from(args)
        assert commits.base is not None
        changes = changes_from(args, checkout, commits.base)
        if changes.empty:
            nothing_to_do(f"no suite or sample file changed since {commits.base[:12]}")
            return NOTHING_TO_DO
        head, base = run_sides(args, checkout, commits, changes)
    except UsageError as exc:
        return usage_error(str(exc))
    if STOP.requested:
        return 1
    code = report_comparison(args, base, head, changes.renames, changes.removed,
                             why_ran=changes.reasons)
    invalid = any(d.is_error for d in head.diagnostics)
    return max(code, 1 if invalid else 0)


def checkout_from(args: argparse.Namespace) -> tuple[Checkout, Commits]:
    """The repository around the current directory, the base commit and the head: HEAD
    when the work tree has no change since it (then the action's very run), else the
    work tree as it is."""
    here = Path.cwd()
    try:
        root = git.top_level(here)
        path_as_base_ref(args, root)
        commits = Commits(base=base_commit(root, args.base_ref), head=git.unchanged_head(root))
    except git.GitError as exc:
        raise UsageError(f"diff needs a git repository: {exc}") from None
    if not 0 <= args.max_depth <= MAX_DEPTH:
        raise UsageError(f"--max-depth must be between 0 and {MAX_DEPTH}, got {args.max_depth}")
    working_directory = here.resolve().relative_to(root.resolve())
    return Checkout(root, working_directory, globs_from(args), max_depth=args.max_depth), \
        commits


def path_as_base_ref(args: argparse.Namespace, root: Path) -> None:
    """`turncheck diff a.eval.yaml`: a BASE_REF that names no commit but an existing
    file or folder is the first PATH (a commit of the same name wins)."""
    ref = args.base_ref
    if ref is not None and git.resolve(root, ref) is None and Path(ref).exists():
        args.base_ref, args.targets = None, [ref, *args.targets]


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


def run_sides(args: argparse.Namespace, checkout: Checkout, commits: Commits,
              changes: SuiteChanges) -> tuple[Report, Report]:
    runner = TwoCommitRun(checkout, commits, changes, options_from(args),
                          listener=partial(tell, commits))
    try:
        reports = runner.run()
    except git.FileTooLarge as exc:
        raise UsageError(f"cannot check out the base commit: {exc}") from None
    if reports.base is not None:
        return reports.head, reports.base
    # Nothing ran at base (no file there, or no base commit to read): an empty base.
    nothing = run_coroutine(run_suite_files([], runner.options.for_base().settings(commits.base)))
    return reports.head, nothing


def tell(commits: Commits, event: Event) -> None:
    """The runner's progress on stderr."""
    if isinstance(event, SideLoaded) and event.side == "head":
        if event.diagnostics:
            print_diagnostics(list(event.diagnostics))
        line = (f"diff against {(commits.base or '')[:12]}: {counted(event.suites, 'suite')}, "
                f"{counted(event.samples, 'sample file')}")
    elif isinstance(event, SideLoaded):
        line = (f"base {(event.commit or '')[:12]}: {event.mode} mode, in a work tree at "
                f"{event.tree}")
    else:
        line = (f"warning: cannot check out the base commit {event.commit[:12]}: "
                f"{event.problem}; its side is empty")
    print(one_line(f"turncheck: {line}"), file=sys.stderr)
