"""The git operations the action needs: what a pull request changed, and files as they
are at a commit.

Every call runs `git` without a shell, with a timeout, without terminal prompts and
with `core.quotepath=off` and literal pathspecs (so `*` or `[` in a file name is not a
pattern). Every failure — git missing, a timeout, a non-zero exit, an unsafe path — is
raised as a `GitError` with a one-line message for the user. Paths are POSIX and
relative to the repository's root; `repo` may be any directory inside the work tree.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import tarfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath

from turncheck.github.client import ChangedFile, FileStatus
from turncheck.providers.cassettes import cassette_path_for

GIT_TIMEOUT_SECONDS = 120.0
FETCH_TIMEOUT_SECONDS = 300.0

# Well under Linux's limits (128 KiB per argument, about 2 MiB for all of argv and env).
_MAX_CHUNK_PATHS = 1000
_MAX_CHUNK_BYTES = 64 * 1024

# An inherited GIT_DIR (say, when run from a git hook) would silently override `repo`.
_REPO_LOCATING_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)

# Copies are new files to us; a type change (file ↔ symlink) is a modification.
# Anything else (U, X, B) cannot occur between two commits and is folded into "modified".
_NAME_STATUS: dict[str, FileStatus] = {
    "A": "added",
    "C": "added",
    "D": "removed",
    "M": "modified",
    "T": "modified",
    "R": "renamed",
}

logger = logging.getLogger(__name__)


class GitError(Exception):
    """A git operation failed; the message is one line, meant for the user."""


def is_repository(repo: Path) -> bool:
    try:
        _run(repo, ["rev-parse", "--git-dir"])
    except GitError:
        return False
    return True


def top_level(repo: Path) -> Path:
    """The root of the work tree `repo` is in."""
    return Path(_stdout_line(_run(repo, ["rev-parse", "--show-toplevel"])))


def current_sha(repo: Path) -> str:
    return _stdout_line(_run(repo, ["rev-parse", "--verify", "HEAD^{commit}"]))


def resolve(repo: Path, ref: str) -> str | None:
    """The full SHA of the commit `ref` names, or None when there is no such commit here."""
    args = ["rev-parse", "--verify", "--quiet", f"{_checked_rev(ref)}^{{commit}}"]
    result = _run(repo, args, ok_codes=(0, 1))
    return _stdout_line(result) if result.returncode == 0 else None


def commit_time(repo: Path, sha: str) -> datetime | None:
    """The committer date of `sha`, or None when the commit is not here."""
    if resolve(repo, sha) is None:
        return None
    result = _run(repo, ["show", "-s", "--format=%cI", _checked_rev(sha)])
    return datetime.fromisoformat(_stdout_line(result))


def has_commit(repo: Path, sha: str) -> bool:
    # rev-parse --verify exits 1 for a missing commit and 128 outside a repository, so a
    # missing commit is False but a broken repository still raises (cat-file -e can't tell).
    return resolve(repo, sha) is not None


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """None when either commit is missing or they share no history (e.g. a shallow clone)."""
    if not (has_commit(repo, a) and has_commit(repo, b)):
        return None
    result = _run(repo, ["merge-base", a, b], ok_codes=(0, 1))
    return _stdout_line(result) if result.returncode == 0 else None


def changed_files(repo: Path, base: str, head: str) -> list[ChangedFile] | None:
    """Files changed on `head` since it left `base` (`base...head`, as GitHub's PR diff).

    None when a commit or the merge base is missing: the caller falls back to the API.
    """
    if merge_base(repo, base, head) is None:
        return None
    args = ["diff", "--name-status", "-M", "--no-color", "--no-ext-diff", "--no-relative", "-z"]
    result = _run(repo, [*args, f"{base}...{head}"])
    return _parse_name_status(result.stdout)


def worktree_changes(repo: Path, base: str) -> list[ChangedFile]:
    """Files the work tree (committed, staged, unstaged and untracked but not ignored)
    changed since the commit `base`: what `turncheck diff` runs."""
    commit = _require_commit(repo, base)
    args = ["diff", "--name-status", "-M", "--no-color", "--no-ext-diff", "--no-relative", "-z"]
    files = _parse_name_status(_run(repo, [*args, commit]).stdout)
    untracked = _run(_work_tree_root(repo), ["ls-files", "--others", "--exclude-standard", "-z"])
    files += [ChangedFile(os.fsdecode(path), "added")
              for path in untracked.stdout.split(b"\0") if path]
    return files


def export_paths(repo: Path, sha: str, paths: Iterable[str], dest: Path) -> list[str]:
    """Write `paths` as they are at commit `sha` under `dest`; return those not at `sha`.

    Content is what a checkout of `sha` would produce (git applies eol/filter attributes).
    A path naming a directory or a submodule counts as missing. `dest` should be a fresh
    directory: files already there may be overwritten.
    """
    requested = list(paths)
    cleaned = {path: _clean_path(path) for path in requested}
    root = _work_tree_root(repo)
    commit = _require_commit(root, sha)
    existing = _existing_files(root, commit, sorted(set(cleaned.values())))
    dest.mkdir(parents=True, exist_ok=True)
    _archive_into(root, commit, sorted(existing), dest)
    _restore_export_ignored(root, commit, sorted(existing), dest)
    return [path for path in requested if cleaned[path] not in existing]


def export_suites(repo: Path, sha: str, suite_paths: Iterable[str], dest: Path) -> list[str]:
    """Like `export_paths`, plus each suite's cassette when `sha` has one.

    Returns the suites missing at `sha`; a missing cassette is not reported.
    """
    suites = list(suite_paths)
    cassettes = [cassette_path_for(Path(_clean_path(suite))).as_posix() for suite in suites]
    missing = set(export_paths(repo, sha, [*suites, *cassettes], dest))
    return [suite for suite in suites if suite in missing]


def fetch(repo: Path, remote: str, refs: list[str], depth: int | None = None) -> bool:
    """Best-effort `git fetch --no-tags`; False (never an exception) when it fails."""
    args = ["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"]
    if depth is not None:
        args.append(f"--depth={depth}")
    try:
        _run(repo, [*args, _checked_rev(remote), *map(_checked_rev, refs)], FETCH_TIMEOUT_SECONDS)
    except GitError as error:
        logger.debug("%s", error)
        return False
    return True


def _parse_name_status(output: bytes) -> list[ChangedFile]:
    fields = iter(os.fsdecode(field) for field in output.split(b"\0") if field)
    files: list[ChangedFile] = []
    for status in fields:
        letter = status[:1]
        if letter in ("R", "C"):
            previous, path = _next_field(fields), _next_field(fields)
            if letter == "R":
                files.append(ChangedFile(path, "renamed", previous))
                continue
        else:
            path = _next_field(fields)
        files.append(ChangedFile(path, _NAME_STATUS.get(letter, "modified")))
    return files


def _next_field(fields: Iterator[str]) -> str:
    field = next(fields, None)
    if field is None:
        raise GitError("could not parse the output of git diff --name-status")
    return field


def _existing_files(root: Path, commit: str, paths: Sequence[str]) -> set[str]:
    """Those of `paths` that are files (blobs, including symlinks) in `commit`'s tree."""
    found: set[str] = set()
    for chunk in _chunks(paths):
        listing = _run(root, ["ls-tree", "-r", "--full-tree", "-z", commit, "--", *chunk])
        for entry in listing.stdout.split(b"\0"):
            info, _, name = entry.partition(b"\t")
            if info.split(b" ")[1:2] == [b"blob"]:
                found.add(os.fsdecode(name))
    return found.intersection(paths)


def _archive_into(root: Path, commit: str, paths: Sequence[str], dest: Path) -> None:
    # Archiving the tree rather than the commit leaves out the pax header holding the commit
    # ID (and `export-subst`), so an archive whose files are all export-ignored is only
    # zero blocks, which tarfile would reject, rather than a header alone.
    tree = f"{commit}^{{tree}}"
    for chunk in _chunks(paths):
        archive = _run(root, ["archive", "--format=tar", tree, "--", *chunk])
        _extract(archive.stdout, dest, commit)


def _extract(tar_bytes: bytes, dest: Path, commit: str) -> None:
    if not tar_bytes.strip(b"\0"):
        return
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            if hasattr(tarfile, "data_filter"):
                # "data" refuses absolute names, `..` and links leading outside `dest`.
                tar.extractall(dest, filter="data")
            else:  # Python before 3.11.4 (Debian 12 ships 3.11.2): no extraction filters
                extract_confined(tar, dest)
    except (tarfile.TarError, OSError) as error:
        raise GitError(f"cannot write the files of commit {commit} to {dest}: {error}") from error


def extract_confined(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract only directories, regular files and symlinks that stay inside `dest`.

    What the "data" filter guarantees, for Pythons that lack it; anything else (an
    absolute name, `..`, a link leaving `dest`, a device) is refused before any write.
    """
    root = Path(os.path.realpath(dest))
    members = tar.getmembers()
    for member in members:
        _check_member(member, root)
    for member in members:
        target = root / member.name
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if member.issym():
            target.symlink_to(member.linkname)
            continue
        source = tar.extractfile(member)
        assert source is not None  # a regular file, checked above
        target.write_bytes(source.read())
        if member.mode & 0o100:
            target.chmod(0o755)


def _check_member(member: tarfile.TarInfo, root: Path) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise tarfile.TarError(f"refused {member.name!r}: a path outside the destination")
    if not (member.isdir() or member.isfile() or member.issym()):
        raise tarfile.TarError(f"refused {member.name!r}: not a file, directory or symlink")
    if member.issym():
        link = PurePosixPath(member.linkname)
        resolved = os.path.normpath(root / name.parent / link)
        if link.is_absolute() or not (resolved == str(root) or
                                      resolved.startswith(str(root) + os.sep)):
            raise tarfile.TarError(f"refused {member.name!r}: a link leading outside")


def _restore_export_ignored(root: Path, commit: str, paths: Collection[str], dest: Path) -> None:
    # git archive silently leaves out files marked `export-ignore` in .gitattributes.
    for path in paths:
        target = dest / path
        if os.path.lexists(target):
            continue
        content = _run(root, ["cat-file", "--filters", f"{commit}:{path}"]).stdout
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        except OSError as error:
            raise GitError(f"cannot write {target}: {error}") from error


def _chunks(paths: Sequence[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for path in paths:
        length = len(os.fsencode(path)) + 1
        if chunk and (len(chunk) >= _MAX_CHUNK_PATHS or size + length > _MAX_CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += length
    if chunk:
        yield chunk


def _clean_path(path: str) -> str:
    pure = PurePosixPath(path)
    if "\0" in path or pure.is_absolute() or ".." in pure.parts or pure == PurePosixPath("."):
        raise GitError(
            f"refusing path {path!r}: paths must be relative to the repository root, without '..'"
        )
    return pure.as_posix()


def _checked_rev(rev: str) -> str:
    # Revisions come from event payloads and user input; one starting with "-" would be
    # read as an option.
    if not rev or rev.startswith("-") or "\0" in rev:
        raise GitError(f"invalid git revision {rev!r}")
    return rev


def _require_commit(repo: Path, sha: str) -> str:
    commit = resolve(repo, sha)
    if commit is None:
        raise GitError(
            f"commit {sha} is not in the repository at {repo}; fetch it first "
            "(with actions/checkout, set fetch-depth: 0)"
        )
    return commit


def _work_tree_root(repo: Path) -> Path:
    # ls-tree and archive take paths relative to the current directory, so run them at
    # the top of the work tree (in a bare repository --show-cdup prints nothing).
    cdup = _stdout_line(_run(repo, ["rev-parse", "--show-cdup"]))
    return repo / cdup if cdup else repo


def _run(
    repo: Path,
    args: Sequence[str],
    timeout: float = GIT_TIMEOUT_SECONDS,
    ok_codes: Collection[int] = (0,),
) -> subprocess.CompletedProcess[bytes]:
    command = ["git", "-C", str(repo), "-c", "core.quotepath=off", "--literal-pathspecs", *args]
    try:
        result = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=_git_env(),
            check=False,
        )
    except FileNotFoundError as error:
        raise GitError("git is not installed (no `git` on PATH)") from error
    except subprocess.TimeoutExpired as error:
        raise GitError(f"git {args[0]} timed out after {timeout:g}s in {repo}") from error
    except OSError as error:
        raise GitError(f"cannot run git {args[0]} in {repo}: {error}") from error
    if result.returncode not in ok_codes:
        raise GitError(f"git {args[0]} failed in {repo}: {_error_summary(result)}")
    return result


def _git_env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _REPO_LOCATING_ENV}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _error_summary(result: subprocess.CompletedProcess[bytes]) -> str:
    """The most telling stderr line: git prints warnings before its fatal error."""
    lines = [line.strip() for line in result.stderr.decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if errors:
        return errors[0]
    return lines[-1] if lines else f"exit status {result.returncode}"


def _stdout_line(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stdout.decode(errors="replace").strip()
