"""Validate every discovered suite and sample file; one bad file hides nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from turncheck.diagnostics import Diagnostic, Severity, sort_key
from turncheck.formats.discovery import FileKind, FoundFile
from turncheck.formats.references import find_root
from turncheck.formats.suite import MAX_DEPTH
from turncheck.formats.suite_loader import SuiteFile, load_suite
from turncheck.gc_pause import gc_paused

if TYPE_CHECKING:
    # Sample files (TOML, graders, Jinja) load their code only when there are some.
    from turncheck.formats.samples import SampleFile


@dataclass
class ValidationResult:
    suites: list[SuiteFile] = field(default_factory=list)
    samples: list[SampleFile] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.suites) + len(self.samples)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = [d for f in self.suites for d in f.diagnostics]
        found += [d for f in self.samples for d in f.diagnostics]
        return sorted(found, key=sort_key)

    def count(self, severity: Severity) -> int:
        return sum(1 for d in self.diagnostics if d.severity is severity)


def display_path(path: Path, root: Path | None = None) -> str:
    """A path as users should see it: relative to `root` (default cwd) when inside it."""
    return _Shown(root).of(path)


class _Shown:
    """`display_path` for many files: the base and each directory resolved once."""

    def __init__(self, root: Path | None) -> None:
        self.base = (root or Path.cwd()).resolve()
        self.directories: dict[Path, Path] = {}

    def of(self, path: Path) -> str:
        directory = self.directories.get(path.parent)
        if directory is None:
            directory = self.directories[path.parent] = path.parent.resolve()
        try:  # the file itself is not resolved: a symlink is shown by its own name
            return (directory / path.name).relative_to(self.base).as_posix()
        except ValueError:
            return path.as_posix()


def validate_files(
    files: list[FoundFile], max_depth: int = MAX_DEPTH, root: Path | None = None,
    result: ValidationResult | None = None,
) -> ValidationResult:
    """Every file loaded and validated, added to `result` (a new one by default) one by
    one, so a caller whose loading is cut short keeps the files already loaded."""
    result = ValidationResult() if result is None else result
    shown = _Shown(root)
    with gc_paused():  # every suite's models live on: collections would find nothing
        for found in files:
            file = shown.of(found.path)
            repository = found.root or find_root(found.path.parent)
            if found.kind is FileKind.SUITE:
                result.suites.append(load_suite(found.path, file, max_depth, repository))
            else:
                from turncheck.formats.sample_loader import load_samples

                result.samples.append(load_samples(found.path, file, repository))
    return result
