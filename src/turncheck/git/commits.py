"""Which commit a name means, when it was made, and fetching one that is missing."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from turncheck.git.command import GitError, checked_rev, run, stdout_line

FETCH_TIMEOUT_SECONDS = 300.0

logger = logging.getLogger(__name__)


def is_repository(repo: Path) -> bool:
    try:
        run(repo, ["rev-parse", "--git-dir"])
    except GitError:
        return False
    return True


def top_level(repo: Path) -> Path:
    """The root of the work tree `repo` is in."""
    return Path(stdout_line(run(repo, ["rev-parse", "--show-toplevel"])))


def current_sha(repo: Path) -> str:
    return stdout_line(run(repo, ["rev-parse", "--verify", "HEAD^{commit}"]))


def resolve(repo: Path, ref: str) -> str | None:
    """The full SHA of the commit `ref` names, or None when there is no such commit here."""
    args = ["rev-parse", "--verify", "--quiet", f"{checked_rev(ref)}^{{commit}}"]
    result = run(repo, args, ok_codes=(0, 1))
    return stdout_line(result) if result.returncode == 0 else None


def require_commit(repo: Path, sha: str) -> str:
    """The full SHA of `sha`; a `GitError` saying how to get it when it is not here."""
    commit = resolve(repo, sha)
    if commit is None:
        raise GitError(
            f"commit {sha} is not in the repository at {repo}; fetch it first "
            "(with actions/checkout, set fetch-depth: 0)"
        )
    return commit


def commit_time(repo: Path, sha: str) -> datetime | None:
    """The committer date of `sha`, or None when the commit is not here."""
    if resolve(repo, sha) is None:
        return None
    result = run(repo, ["show", "-s", "--format=%cI", checked_rev(sha)])
    return datetime.fromisoformat(stdout_line(result))


def has_commit(repo: Path, sha: str) -> bool:
    # rev-parse --verify exits 1 for a missing commit and 128 outside a repository, so a
    # missing commit is False but a broken repository still raises (cat-file -e can't tell).
    return resolve(repo, sha) is not None


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """None when either commit is missing or they share no history (e.g. a shallow clone)."""
    if not (has_commit(repo, a) and has_commit(repo, b)):
        return None
    result = run(repo, ["merge-base", a, b], ok_codes=(0, 1))
    return stdout_line(result) if result.returncode == 0 else None


def fetch(repo: Path, remote: str, refs: list[str], depth: int | None = None) -> bool:
    """Best-effort `git fetch --no-tags`; False (never an exception) when it fails."""
    args = ["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"]
    if depth is not None:
        args.append(f"--depth={depth}")
    try:
        run(repo, [*args, checked_rev(remote), *map(checked_rev, refs)], FETCH_TIMEOUT_SECONDS)
    except GitError as error:
        logger.debug("%s", error)
        return False
    return True
