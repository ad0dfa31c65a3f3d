"""A repository checkout whose suites run at two commits: where its suites are, which of
them a change touches, and the same places in another tree of the repository (the base
commit's work tree). Shared by the action (a pull request's head and base) and
`turncheck diff` (the work tree and a base ref)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from turncheck.engine.interruption import STOP
from turncheck.formats.discovery import FileKind, FoundFile, Globs, discover
from turncheck.formats.sample_loader import load_samples
from turncheck.formats.samples import SampleFile
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.suite_loader import SuiteFile, load_suite
from turncheck.git.changes import ChangedFile
from turncheck.sides.changes import SuiteChanges, suite_changes
from turncheck.sides.dependencies import add_dependency_changes, dependencies_of


@dataclass(frozen=True)
class Checkout:
    root: Path
    """The repository's work tree whose suites run."""
    working_directory: Path = Path(".")
    """Where suites are, relative to `root`."""
    globs: Globs = field(default_factory=Globs)
    watch: tuple[str, ...] = ()
    """Repository-root-relative globs whose change runs every suite."""
    max_depth: int = MAX_DEPTH

    @property
    def workdir(self) -> Path:
        return self.root / self.working_directory

    def found(self, relative: Sequence[str], kind: FileKind) -> list[FoundFile]:
        return [FoundFile(self.workdir / path, kind) for path in relative
                if os.path.lexists(self.workdir / path)]

    def all_relative(self) -> list[str]:
        found = discover([str(self.workdir)], self.globs)
        return [f.path.relative_to(self.workdir).as_posix() for f in found.files]

    def changes_among(self, files: list[ChangedFile]) -> SuiteChanges:
        """The suites and sample files among changed `files` (repo-relative paths)."""
        existing = set(self.all_relative())
        changes = suite_changes(files, self.globs, self.working_directory.as_posix(), existing)
        # A suite's referenced files (prompts, messages, cases) and watched globs are part of it.
        suites = sorted(p for p in existing if self.globs.kind_of(p) is FileKind.SUITE)
        samples = sorted(p for p in existing if self.globs.kind_of(p) is FileKind.SAMPLES)
        add_dependency_changes(changes, files,
                               dependencies_of(self.workdir, self.root, suites, samples),
                               suites, self.watch)
        return changes

    def at(self, tree: Path) -> Checkout:
        """The same working directory, globs and limits in another tree of the repository."""
        return replace(self, root=tree)

    def load(self, suites: Sequence[str], samples: Sequence[str]
             ) -> tuple[list[SuiteFile], list[SampleFile]]:
        """Those of `suites` and sample files that exist here, loaded (no validation
        report: the base side's problems are the base commit's, not the change's)."""
        loaded: list[SuiteFile] = []
        graded: list[SampleFile] = []

        def load_all() -> None:  # a signal ends it: the files loaded so far run
            loaded.extend(load_suite(self.workdir / path, path, self.max_depth, root=self.root)
                          for path in suites if os.path.lexists(self.workdir / path))
            graded.extend(load_samples(self.workdir / path, path, root=self.root)
                          for path in samples if os.path.lexists(self.workdir / path))

        STOP.cut_short(load_all)
        return loaded, graded
