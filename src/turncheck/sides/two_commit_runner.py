"""The two-commit runner: a checkout's changed suites run at its head and at a base
commit, both sides at the same time and priced at one instant (`engine.runner.
run_both_sides`). The action (a pull request, a merge queue's group) and `turncheck
diff` (the work tree against a base ref) both run through it.

The base side runs in a `git worktree` of the base commit — the whole tree, as a
checkout of that commit has it — which is removed when the run ends, however it ends.
What happens along the way is told to a listener as values (`SideLoaded`,
`BaseUnavailable`); each caller words them for its own output."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from turncheck import git
from turncheck.choices import Mode
from turncheck.diagnostics import Diagnostic
from turncheck.engine.interruption import STOP
from turncheck.engine.loop import run_coroutine
from turncheck.engine.runner import Side, run_both_sides, run_suite_files
from turncheck.engine.sharding import ShardSpec, select_shard
from turncheck.formats.discovery import FileKind
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.report.run import Report, ShardInfo
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.checkout import Checkout
from turncheck.sides.options import RunOptions


@dataclass(frozen=True)
class Commits:
    base: str | None
    """The full SHA of the base commit; None: the head runs alone."""
    head: str | None
    """The full SHA of the head commit, whose files the checkout holds (the reports name
    it, prices are taken at its time); None: the work tree as it is, uncommitted changes
    included (`turncheck diff` on a changed work tree)."""


@dataclass(frozen=True)
class SideLoaded:
    """A side's files are loaded and about to run."""

    side: Literal["head", "base"]
    commit: str | None
    suites: int
    samples: int
    mode: Mode
    tree: Path
    """Where the side's files are: the checkout, or the base commit's work tree."""
    diagnostics: tuple[Diagnostic, ...] = ()
    """The head's validation problems (the base's are the base commit's own)."""


@dataclass(frozen=True)
class BaseUnavailable:
    """The base commit cannot be checked out; the head runs alone."""

    commit: str
    problem: str


Event = SideLoaded | BaseUnavailable


def _ignore(event: Event) -> None:
    del event


@dataclass(frozen=True)
class SideReports:
    head: Report
    base: Report | None
    """None when the change has nothing at base or the base commit is unavailable."""


@dataclass
class TwoCommitRun:
    checkout: Checkout
    commits: Commits
    changes: SuiteChanges
    options: RunOptions
    shard: ShardSpec | None = None
    """This job's part of each side's suites; sample files are graded in shard 1."""
    listener: Callable[[Event], None] = field(default=_ignore)

    def __post_init__(self) -> None:
        # Both sides priced at one instant: the one asked for, else the head commit's
        # time (every shard and re-run of a pull request prices alike), else now.
        self.options = self.options.priced_at(self.options.price_timestamp or price_instant(
            self.checkout.root, self.commits.head))

    @property
    def has_base(self) -> bool:
        return self.commits.base is not None and bool(
            self.changes.base_suites or self.changes.base_samples)

    def run(self) -> SideReports:
        """Both sides at the same time (the head alone when nothing runs at base)."""
        head = self.head_side()
        with self.base_tree() as tree:
            base = None if tree is None else self.base_side(tree)
            return self._run(head, base)

    def run_head(self) -> Report:
        return self._run(self.head_side(), None).head

    def run_base(self) -> Report | None:
        """The base side alone (the head ran elsewhere: a sharded run's report job)."""
        with self.base_tree() as tree:
            if tree is None:
                return None
            base, shard = self._sharded(self.base_side(tree))
            report = run_coroutine(run_suite_files(base.files, base.settings, samples=base.samples))
        return report.model_copy(update={"shard": shard})

    def head_side(self) -> Side:
        checkout, changes = self.checkout, self.changes
        files = checkout.found(changes.head_suites, FileKind.SUITE) + checkout.found(
            changes.samples, FileKind.SAMPLES)
        validation = ValidationResult()  # a signal ends loading: the files loaded so far run
        STOP.cut_short(lambda: validate_files(files, checkout.max_depth, root=checkout.workdir,
                                              result=validation))
        self.listener(SideLoaded("head", self.commits.head, len(validation.suites),
                                 len(validation.samples), self.options.mode, checkout.root,
                                 tuple(validation.diagnostics)))
        return Side(validation.suites, self.options.settings(self.commits.head),
                    validation.diagnostics, validation.samples)

    def base_side(self, tree: Path) -> Side:
        suites, samples = self.checkout.at(tree).load(self.changes.base_suites,
                                                      self.changes.base_samples)
        options = self.options.for_base()
        self.listener(SideLoaded("base", self.commits.base, len(suites), len(samples),
                                 options.mode, tree))
        return Side(suites, options.settings(self.commits.base), samples=samples)

    @contextlib.contextmanager
    def base_tree(self) -> Iterator[Path | None]:
        """The base commit's work tree while the run needs it; None when nothing runs at
        base or the commit cannot be checked out (a `git.FileTooLarge` is raised)."""
        if not self.has_base or self.commits.base is None:
            yield None
            return
        with contextlib.ExitStack() as stack:
            try:
                tree: Path | None = stack.enter_context(
                    git.work_tree(self.checkout.root, self.commits.base))
            except git.FileTooLarge:
                raise
            except git.GitError as exc:
                self.listener(BaseUnavailable(self.commits.base, str(exc)))
                tree = None
            yield tree

    def _run(self, head: Side, base: Side | None) -> SideReports:
        head, head_shard = self._sharded(head)
        base_shard = None
        if base is not None:
            base, base_shard = self._sharded(base)
        head_report, base_report = run_coroutine(
            run_both_sides(head, base, self.changes.renames))
        return SideReports(
            head_report.model_copy(update={"shard": head_shard}),
            None if base_report is None else base_report.model_copy(
                update={"shard": base_shard}))

    def _sharded(self, side: Side) -> tuple[Side, ShardInfo | None]:
        if self.shard is None:
            return side, None
        files, shard = select_shard(side.files, self.shard)
        samples = side.samples if self.shard.index == 1 else ()
        return replace(side, files=files, samples=samples), shard


def price_instant(root: Path, head: str | None) -> str:
    """The head commit's time, else now (ISO 8601, UTC)."""
    when = None
    if head is not None:
        with contextlib.suppress(git.GitError):
            when = git.commit_time(root, head)
    return (when or datetime.now(UTC)).astimezone(UTC).isoformat(
        timespec="seconds").replace("+00:00", "Z")
