"""The git operations turncheck needs: which commit a name means, what changed between
two commits (or in the work tree), and a commit's tree checked out for a run.

Paths are POSIX and relative to the repository's root; `repo` may be any directory
inside the work tree. Failures are `GitError`s with a one-line message for the user."""

from turncheck.git.changes import (
    ChangedFile,
    FileStatus,
    changed_files,
    unchanged_head,
    worktree_changes,
)
from turncheck.git.command import GitError
from turncheck.git.commits import (
    commit_time,
    current_sha,
    fetch,
    has_commit,
    is_repository,
    merge_base,
    require_commit,
    resolve,
    top_level,
)
from turncheck.git.worktree import MAX_FILE_BYTES, FileTooLarge, work_tree

__all__ = [
    "MAX_FILE_BYTES",
    "ChangedFile",
    "FileStatus",
    "FileTooLarge",
    "GitError",
    "changed_files",
    "commit_time",
    "current_sha",
    "fetch",
    "has_commit",
    "is_repository",
    "merge_base",
    "require_commit",
    "resolve",
    "top_level",
    "unchanged_head",
    "work_tree",
    "worktree_changes",
]
