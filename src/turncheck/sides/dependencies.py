"""Suites a pull request changes through the files they depend on.

A suite depends on every file it references (`{file: …}` prompts, messages and vars
files, a protocol's cases file — directly or through another referenced file) and on
the files its `metadata.watch` globs match; the action's `watch` input names
repository-wide globs whose change runs every suite. Paths of changed files and
referenced files are relative to the repository root; suites are relative to the
working directory, as everywhere in the action.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from turncheck.formats.discovery import glob_matches
from turncheck.formats.references import referenced_paths, watch_globs
from turncheck.formats.sample_loader import load_samples
from turncheck.git.changes import ChangedFile
from turncheck.sides.changes import SuiteChanges


@dataclass
class Dependencies:
    """What each suite depends on besides its own file and cassette."""

    files: dict[str, list[str]] = field(default_factory=dict)
    """Root-relative referenced file → the suites referencing it."""
    watches: dict[str, list[str]] = field(default_factory=dict)
    """Root-relative glob → the suites watching it."""
    samples: dict[str, list[str]] = field(default_factory=dict)
    """Root-relative referenced file → the sample files whose grader reads it."""


def dependencies_of(workdir: Path, root: Path, suites: Iterable[str],
                    samples: Iterable[str] = ()) -> Dependencies:
    """What `suites` and sample files (`samples`, through their grader) depend on."""
    found = Dependencies()
    for suite in suites:
        for reference in referenced_paths(workdir / suite, root):
            found.files.setdefault(reference.path, []).append(suite)
        for glob in watch_globs(workdir / suite):
            found.watches.setdefault(glob, []).append(suite)
    for sample_file in samples:
        for reference in load_samples(workdir / sample_file, sample_file).references:
            found.samples.setdefault(reference.path, []).append(sample_file)
    return found


def add_dependency_changes(changes: SuiteChanges, files: Sequence[ChangedFile],
                           dependencies: Dependencies, all_suites: Sequence[str],
                           repository_watch: Sequence[str] = ()) -> None:
    """Run (at head and base) every suite a changed file reaches, and say why."""
    for changed in files:
        paths = [changed.path, *([changed.previous_path] if changed.previous_path else [])]
        for path in paths:
            for suite in dependencies.files.get(path, ()):
                _run_both(changes, suite, f"{path} changed")
            for sample_file in dependencies.samples.get(path, ()):
                _grade(changes, sample_file, f"{path} changed")
            for glob, suites in dependencies.watches.items():
                if glob_matches(glob, path):
                    for suite in suites:
                        _run_both(changes, suite, f"{path} changed (watch: {glob})")
            for glob in repository_watch:
                if glob_matches(glob, path):
                    for suite in all_suites:
                        _run_both(changes, suite, f"{path} changed (repository watch: {glob})")


def _run_both(changes: SuiteChanges, suite: str, reason: str) -> None:
    if suite not in changes.head_suites:
        changes.head_suites.append(suite)
    if suite not in changes.base_suites:
        changes.base_suites.append(suite)
    reasons = changes.reasons.setdefault(suite, [])
    if reason not in reasons:
        reasons.append(reason)


def _grade(changes: SuiteChanges, sample_file: str, reason: str) -> None:
    if sample_file not in changes.samples:
        changes.samples.append(sample_file)
    reasons = changes.reasons.setdefault(sample_file, [])
    if reason not in reasons:
        reasons.append(reason)
