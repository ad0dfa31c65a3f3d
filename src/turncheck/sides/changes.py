"""Which suites and sample files a pull request touches, from its changed files.

Paths are repo-relative in and working-directory-relative out. A changed
cassette counts as a change to its suite, since it changes the suite's results.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from turncheck.formats.discovery import FileKind, Globs
from turncheck.git.changes import ChangedFile

CASSETTE_SUFFIX = ".cassette.yaml"


@dataclass
class SuiteChanges:
    head_suites: list[str] = field(default_factory=list)
    """Suites to run at head (added, modified, renamed, or whose cassette changed)."""
    base_suites: list[str] = field(default_factory=list)
    """Suites to run at base, as named at base (modified, renamed-from, removed)."""
    samples: list[str] = field(default_factory=list)
    """Sample files to grade at head (added, modified, renamed, or whose cassette changed)."""
    renames: dict[str, str] = field(default_factory=dict)
    """Head path → base path of renamed suites and sample files."""
    removed: list[str] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    """Suite → why it runs when not its own file changed ("prompts/support.md changed")."""

    @property
    def base_samples(self) -> list[str]:
        """The changed sample files as named at base (to grade them there too)."""
        return [self.renames.get(path, path) for path in self.samples]

    @property
    def empty(self) -> bool:
        return not (self.head_suites or self.base_suites or self.samples)


def _relative(path: str, working_directory: str) -> str | None:
    root = PurePosixPath(working_directory)
    candidate = PurePosixPath(path)
    if str(root) in ("", "."):
        return candidate.as_posix()
    try:
        return candidate.relative_to(root).as_posix()
    except ValueError:
        return None


def _suite_of_cassette(path: str) -> str | None:
    if not path.endswith(CASSETTE_SUFFIX):
        return None
    return path[: -len(CASSETTE_SUFFIX)]  # a suite if the globs say so


def _samples_of_cassette(path: str, globs: Globs) -> str | None:
    """`x.samples.cassette.yaml` → `x.samples.toml`, when that is a sample file's name."""
    if not path.endswith(CASSETTE_SUFFIX):
        return None
    owner = path[: -len(CASSETTE_SUFFIX)] + ".toml"
    return owner if globs.kind_of(owner) is FileKind.SAMPLES else None


def _classify(path: str | None, globs: Globs) -> tuple[str, FileKind] | None:
    if path is None:
        return None
    kind = globs.kind_of(path)
    if kind is not None:
        return path, kind
    samples = _samples_of_cassette(path, globs)
    if samples is not None:
        return samples, FileKind.SAMPLES
    stem = _suite_of_cassette(path)
    if stem is None:
        return None
    for extension in (".yaml", ".yml"):
        if globs.kind_of(stem + extension) is FileKind.SUITE:
            return stem + extension, FileKind.SUITE
    return None


def _add(items: list[str], path: str) -> None:
    if path not in items:
        items.append(path)


def suite_changes(files: Iterable[ChangedFile], globs: Globs, working_directory: str,
                  exists_at_head: set[str] | None = None) -> SuiteChanges:
    """`exists_at_head` (relative paths) resolves a changed cassette whose suite is gone."""
    changes = SuiteChanges()
    for changed in files:
        current = _classify(_relative(changed.path, working_directory), globs)
        previous = _classify(_relative(changed.previous_path, working_directory), globs) \
            if changed.previous_path else None
        target = current or previous
        if target is None:
            continue
        path, kind = target
        is_cassette = changed.path.endswith(CASSETTE_SUFFIX)
        if kind is FileKind.SAMPLES:
            _record_samples(changes, changed, path, previous[0] if previous else None,
                            is_cassette, exists_at_head)
            continue
        _record_suite(changes, changed, path, previous[0] if previous else None, is_cassette,
                      exists_at_head)
    return changes


def _record_samples(changes: SuiteChanges, changed: ChangedFile, path: str,
                    previous: str | None, is_cassette: bool,
                    exists_at_head: set[str] | None) -> None:
    """Removed sample files are not graded; a changed cassette regrades its sample file."""
    if is_cassette:
        if exists_at_head is None or path in exists_at_head:
            _add(changes.samples, path)
        return
    if changed.status == "removed":
        return
    _add(changes.samples, path)
    if changed.status == "renamed" and previous is not None:
        changes.renames[path] = previous


def _record_suite(changes: SuiteChanges, changed: ChangedFile, path: str, previous: str | None,
                  is_cassette: bool, exists_at_head: set[str] | None) -> None:
    if is_cassette:
        if exists_at_head is None or path in exists_at_head:
            _add(changes.head_suites, path)
            _add(changes.base_suites, path)
        return
    if changed.status == "removed":
        _add(changes.base_suites, path)
        _add(changes.removed, path)
    elif changed.status == "added":
        _add(changes.head_suites, path)
    elif changed.status == "renamed" and previous is not None:
        _add(changes.head_suites, path)
        _add(changes.base_suites, previous)
        changes.renames[path] = previous
    else:
        _add(changes.head_suites, path)
        _add(changes.base_suites, path)
