"""What changed between two commits, or in the work tree since a commit."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from turncheck.git.command import GitError, records, work_tree_root
from turncheck.git.commits import merge_base, require_commit, resolve

FileStatus = Literal["added", "modified", "removed", "renamed"]

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
_DIFF = ["diff", "--name-status", "-M", "--no-color", "--no-ext-diff", "--no-relative", "-z"]


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: FileStatus
    previous_path: str | None = None  # set for renamed files only


def changed_files(repo: Path, base: str, head: str) -> list[ChangedFile] | None:
    """Files changed on `head` since it left `base` (`base...head`, as GitHub's PR diff).

    None when a commit or the merge base is missing: the caller falls back to the API.
    """
    if merge_base(repo, base, head) is None:
        return None
    return parse_name_status(records(repo, [*_DIFF, f"{base}...{head}"]))


def worktree_changes(repo: Path, base: str) -> list[ChangedFile]:
    """Files the work tree (committed, staged, unstaged and untracked but not ignored)
    changed since the commit `base`: what `turncheck diff` runs."""
    commit = require_commit(repo, base)
    files = parse_name_status(records(repo, [*_DIFF, commit]))
    untracked = records(work_tree_root(repo), ["ls-files", "--others", "--exclude-standard",
                                               "-z"])
    files += [ChangedFile(os.fsdecode(path), "added") for path in untracked if path]
    return files


def parse_name_status(output: Iterable[bytes]) -> list[ChangedFile]:
    fields = (os.fsdecode(field) for field in output if field)
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


def unchanged_head(repo: Path) -> str | None:
    """HEAD's SHA when the work tree holds nothing HEAD does not (no staged, unstaged or
    untracked change; ignored files aside), else None."""
    head = resolve(repo, "HEAD")
    if head is None:
        return None
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=normal"]
    with contextlib.closing(records(repo, args)) as status:
        return head if next(status, None) is None else None
