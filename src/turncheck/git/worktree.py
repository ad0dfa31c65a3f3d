"""A commit's whole tree checked out beside the repository's own work tree, for as long
as a run needs it (`git worktree add`), and removed afterwards whatever happens.

Before anything is written, every file of the commit is measured from git's object
headers (`git ls-tree -l`, which reads no content): a file over `MAX_FILE_BYTES` is
refused by name. A checkout holds each file whole in memory, so one huge blob (a 2 GiB
file of zeros takes 2 MB in `.git`) would otherwise cost gigabytes."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from turncheck.git.command import GitError, records, run, work_tree_root
from turncheck.git.commits import require_commit

MAX_FILE_BYTES = 100 * 1024 * 1024
"""The largest file a checked-out commit may hold (GitHub refuses larger files too)."""
CHECKOUT_TIMEOUT_SECONDS = 600.0
WORK_TREE_PREFIX = "turncheck-base-"


class FileTooLarge(GitError):
    """The commit holds a file over the limit; nothing was checked out."""

    def __init__(self, commit: str, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path!r} is {byte_size(size)} at commit {commit[:12]}, over the "
                         f"{byte_size(limit)} limit for a file turncheck checks out; keep "
                         "large files in Git LFS")
        self.path = path
        self.size = size


@contextlib.contextmanager
def work_tree(repo: Path, commit: str, max_file_bytes: int = MAX_FILE_BYTES
              ) -> Iterator[Path]:
    """The tree of `commit` checked out in a fresh directory (detached, without hooks,
    LFS files left as pointers as actions/checkout leaves them by default); the directory
    and git's record of it are removed on leaving, also on an error or an interruption."""
    root = work_tree_root(repo)
    sha = require_commit(root, commit)
    refuse_large_files(root, sha, max_file_bytes)
    _prune(root)  # records of work trees an earlier, killed run left behind
    holder = Path(tempfile.mkdtemp(prefix=WORK_TREE_PREFIX))
    tree = holder / "tree"
    try:
        run(root, ["worktree", "add", "--detach", "--quiet", str(tree), sha],
            timeout=CHECKOUT_TIMEOUT_SECONDS, env={"GIT_LFS_SKIP_SMUDGE": "1"})
        yield tree
    finally:
        _remove(root, tree, holder)


def refuse_large_files(repo: Path, commit: str, limit: int = MAX_FILE_BYTES) -> None:
    """`FileTooLarge` naming the first file of `commit` over `limit` bytes."""
    for entry in records(repo, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]):
        info, _, name = entry.partition(b"\t")
        fields = info.split()
        if len(fields) == 4 and fields[1] == b"blob" and fields[3].isdigit() \
                and int(fields[3]) > limit:
            raise FileTooLarge(commit, os.fsdecode(name), int(fields[3]), limit)


def _remove(root: Path, tree: Path, holder: Path) -> None:
    with contextlib.suppress(GitError):
        run(root, ["worktree", "remove", "--force", "--force", str(tree)])
    shutil.rmtree(holder, ignore_errors=True)
    _prune(root)


def _prune(root: Path) -> None:
    with contextlib.suppress(GitError):
        run(root, ["worktree", "prune"])


def byte_size(size: int) -> str:
    """`2.0 GiB`, `100 MiB`, `512 bytes`: a size for a message."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"
