"""A repository checkout whose suites run at two commits: which suites a change touches,
and the base side's files as they are at the base commit. Shared by the action (a pull
request's head and base) and `turncheck diff` (the work tree and a base ref)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from turncheck.formats.discovery import FileKind, FoundFile, Globs, discover
from turncheck.formats.samples import SampleFile, load_samples
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.suite_loader import SuiteFile, load_suite
from turncheck.github import git
from turncheck.github.changes import SuiteChanges, suite_changes
from turncheck.github.client import ChangedFile
from turncheck.github.dependencies import (
    MAX_EXPORT_ROUNDS,
    add_dependency_changes,
    base_references,
    dependencies_of,
)

Log = Callable[[str], None]


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

    def base_files(self, base_sha: str, suites: Sequence[str], samples: Sequence[str],
                   dest: Path, log: Log) -> tuple[list[SuiteFile], list[SampleFile]] | None:
        """`suites` and sample files (paths as named at base) exported from `base_sha`
        under `dest` with every file they reference, and loaded; None when the base commit
        cannot be read."""
        prefix = self.working_directory
        repo_paths = [(prefix / s).as_posix() for s in suites]
        sample_paths = [(prefix / s).as_posix() for s in samples]
        try:
            missing = set(git.export_suites(self.root, base_sha, repo_paths + sample_paths,
                                            dest))
        except git.GitError as exc:
            log(f"::warning title=turncheck::cannot read the base commit: {exc}")
            return None
        present = [(s, dest / prefix / s) for s, repo in zip(suites, repo_paths, strict=True)
                   if repo not in missing]
        present_samples = [(s, dest / prefix / s) for s, repo in
                           zip(samples, sample_paths, strict=True) if repo not in missing]
        self.export_base_references(base_sha, dest, [p for _, p in present],
                                    [p for _, p in present_samples], log)
        loaded = [load_suite(path, s, self.max_depth, root=dest) for s, path in present]
        graded = [load_samples(path, s, root=dest) for s, path in present_samples]
        return loaded, graded

    def export_base_references(self, base_sha: str, dest: Path, suites: list[Path],
                               samples: list[Path], log: Log) -> None:
        """Write every file the base `suites` and sample files reference (prompts,
        messages, cases files, and the files those reference) under `dest` as it is at
        `base_sha`, one chain link a round."""
        exported: set[str] = set()
        for _ in range(MAX_EXPORT_ROUNDS):
            wanted = base_references(dest, suites, exported, samples)
            if not wanted:
                return
            exported |= wanted
            try:
                git.export_paths(self.root, base_sha, sorted(wanted), dest)
            except git.GitError as exc:
                log(f"::warning title=turncheck::cannot read a referenced file at base: {exc}")
                return
