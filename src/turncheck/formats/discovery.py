"""Find suite and sample files under the paths a user names.

Globs are matched against paths relative to each directory argument; `**/`
matches zero or more directories. An exclude glob drops the files it matches and
everything under the directories it matches. A cassette (`*.cassette.yaml`) is
never a suite. A file named explicitly is always taken, classified by its
extension.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

from turncheck.text.user_regex import UserRegex, compile_user_regex

DEFAULT_SUITE_GLOBS = ("**/*.eval.yaml", "**/*.eval.yml", "**/evals.yaml", "**/evals.yml")
DEFAULT_SAMPLE_GLOBS = ("**/*.samples.toml",)
CASSETTE_SUFFIX = ".cassette.yaml"
SKIPPED_DIRECTORIES = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox"})


class FileKind(StrEnum):
    SUITE = "suite"
    SAMPLES = "samples"


@dataclass(frozen=True)
class Globs:
    suites: tuple[str, ...] = DEFAULT_SUITE_GLOBS
    samples: tuple[str, ...] = DEFAULT_SAMPLE_GLOBS
    excludes: tuple[str, ...] = ()

    def excluded(self, relative: str) -> bool:
        """Whether an exclude glob matches `relative` or one of its parent directories."""
        parts = relative.replace(os.sep, "/").split("/")
        prefixes = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
        return any(glob_matches(p, prefix) for p in self.excludes for prefix in prefixes)

    def kind_of(self, relative: str) -> FileKind | None:
        if relative.endswith(CASSETTE_SUFFIX) or self.excluded(relative):
            return None
        if any(glob_matches(pattern, relative) for pattern in self.suites):
            return FileKind.SUITE
        if any(glob_matches(pattern, relative) for pattern in self.samples):
            return FileKind.SAMPLES
        return None


@dataclass(frozen=True)
class FoundFile:
    path: Path
    kind: FileKind
    root: Path | None = None
    """The repository the file was found in; its real path (and every file it references)
    must stay inside. None: the repository above the file (`find_root`)."""


@dataclass
class Discovery:
    files: list[FoundFile] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)  # devices, pipes, sockets


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> UserRegex:
    """The compiled form of a glob whose `**/` spans directories and `*` stays in one.

    Matched with RE2: globs and paths both come from pull requests, and with Python's
    `re` nine `*`s against a 60-character path backtracked for minutes.
    """
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(pattern[index]))
            index += 1
    return compile_user_regex("".join(parts), ignore_case=False)


def glob_matches(pattern: str, relative: str) -> bool:
    return glob_regex(pattern).fullmatch(relative.replace(os.sep, "/"))


def kind_by_extension(path: Path) -> FileKind | None:
    if path.suffix in (".yaml", ".yml"):
        return FileKind.SUITE
    if path.suffix == ".toml":
        return FileKind.SAMPLES
    return None


def _walk(directory: Path, globs: Globs) -> Iterable[FoundFile]:
    repository = _repository_of(directory)
    for parent, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRECTORIES)
        for filename in sorted(filenames):
            full = Path(parent, filename)
            kind = globs.kind_of(full.relative_to(directory).as_posix())
            if kind is not None:
                yield FoundFile(full, kind, root=repository)


def _repository_of(directory: Path) -> Path:
    from turncheck.formats.references import find_root  # imported when first needed

    return find_root(directory)


def discover(paths: Sequence[str], globs: Globs = Globs()) -> Discovery:
    """Files to check under `paths`, in a stable order, without duplicates."""
    result = Discovery()
    seen: set[Path] = set()
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found: Iterable[FoundFile] = _walk(path, globs)
        elif path.is_file() or path.is_symlink():  # the loader refuses what is not a file
            kind = globs.kind_of(path.name) or kind_by_extension(path)
            if kind is None:
                result.unsupported.append(name)
                continue
            found = [FoundFile(path, kind, root=_repository_of(path.parent))]
        elif path.exists():
            result.special.append(name)
            continue
        else:
            result.missing.append(name)
            continue
        for item in found:
            key = item.path.resolve()
            if key not in seen:
                seen.add(key)
                result.files.append(item)
    return result
