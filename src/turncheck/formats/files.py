"""The one place turncheck opens files: bounded reads and confined, symlink-free writes.

Every file turncheck reads from a repository (suites, sample files, cases files,
cassettes, reports, the event payload) may come from an untrusted pull request,
so it is read with `read_bytes_bounded` / `read_text_bounded`:

- its real path (symlinks resolved) must lie inside `root`, the repository or
  workspace directory it was found in (by default the directory that names it);
- it must be a regular file (not `/dev/zero`, a FIFO or a directory);
- its size is checked with `fstat` before reading, and the read itself stops one
  byte past the limit, so a file that grows while being read is still bounded.

Every file turncheck writes (reports, cassettes, JUnit, comparisons) goes through
`write_text_confined`: it refuses a path that is a symlink, that lies (after
resolving its directory) outside `root`, and writes atomically (temporary file in
the same directory, then `os.replace`).

Refusals raise `FileRefused`, whose message is written for users and whose
`code` is a diagnostic code (`file-too-large`, `not-a-regular-file`,
`outside-workspace`, `read-error`, `symlink-refused`).
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from pathlib import Path

from turncheck.diagnostics import Diagnostic, error

MAX_SOURCE_BYTES = 5 * 1024 * 1024
"""Suites, sample files and cases files: far above any real one, far below harm."""
MAX_DATA_BYTES = 64 * 1024 * 1024
"""Reports, cassettes and other machine-written files."""
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class FileRefused(OSError):
    """turncheck will not read or write this file; `message` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


def _root_of(path: Path, root: Path | str | None) -> Path:
    return _real_directory(os.fspath(root if root is not None else Path(path).parent))


@functools.lru_cache(maxsize=256)
def _real_directory(directory: str) -> Path:
    # The roots are the repository and workspace (and a suite's folder): resolved once
    # per run rather than once for every file read below them.
    return Path(os.path.realpath(directory))


def confined_real_path(path: Path | str, root: Path | str | None = None) -> Path:
    """`path` with symlinks resolved; FileRefused unless it lies inside `root`."""
    real = Path(os.path.realpath(path))
    base = _root_of(Path(path), root)
    if real != base and not real.is_relative_to(base):
        raise FileRefused(
            "outside-workspace",
            f"{path} leads outside {base} (to {real}); turncheck only reads files inside "
            "the repository",
        )
    return real


def read_bytes_bounded(
    path: Path | str, *, root: Path | str | None = None, limit: int = MAX_SOURCE_BYTES
) -> bytes:
    """The bytes of `path` if it is a regular file inside `root` of at most `limit` bytes.

    Raises FileNotFoundError when it does not exist, FileRefused for everything refused,
    and other OSErrors as the system reports them.
    """
    real = confined_real_path(path, root)
    fd = os.open(real, _READ_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("not-a-regular-file",
                              f"{path} is not a regular file (a device, pipe or directory)")
        if info.st_size > limit:
            raise FileRefused("file-too-large", _too_large(path, limit))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileRefused("file-too-large", _too_large(path, limit))
    return data


def read_text_bounded(
    path: Path | str, *, root: Path | str | None = None, limit: int = MAX_SOURCE_BYTES,
    encoding: str = "utf-8",
) -> str:
    """`read_bytes_bounded`, decoded; a UnicodeDecodeError passes through."""
    return read_bytes_bounded(path, root=root, limit=limit).decode(encoding)


def _too_large(path: Path | str, limit: int) -> str:
    return f"{path} is larger than the {limit:,}-byte limit and was not read"


def refusal_reason(exc: OSError) -> str:
    """A short user-facing reason for a failed read or write."""
    if isinstance(exc, FileRefused):
        return exc.message
    return exc.strerror or str(exc)


def read_diagnostic(file: str, exc: OSError) -> Diagnostic:
    """The `file:1:1` diagnostic of a file that could not be read."""
    code = exc.code if isinstance(exc, FileRefused) else "read-error"
    return error(file, 1, 1, code, f"cannot read: {refusal_reason(exc)}")


def write_text_confined(path: Path | str, text: str, *, root: Path | str | None = None) -> None:
    """Write `text` to `path` atomically, never through a symlink nor outside `root`.

    Without `root` (a path a user named on the command line) only the symlink check applies.
    """
    target = Path(path)
    if target.is_symlink():
        raise FileRefused("symlink-refused", f"refusing to write {path}: it is a symbolic link")
    if target.exists() and not target.is_file():
        raise FileRefused("not-a-regular-file", f"refusing to write {path}: not a regular file")
    target.parent.mkdir(parents=True, exist_ok=True)
    real_parent = Path(os.path.realpath(target.parent))
    base = Path(os.path.realpath(root)) if root is not None else real_parent
    if not real_parent.is_relative_to(base):
        raise FileRefused("outside-workspace",
                          f"refusing to write {path}: it lies outside {base}")
    _replace_atomically(real_parent / target.name, text)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _replace_atomically(path: Path, text: str) -> None:
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; these files are committed or uploaded like any other.
        os.chmod(tmp_name, 0o666 & ~_current_umask())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
