"""Tests for turncheck.git against real throwaway repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.git_repo import GitRepo
from turncheck import git
from turncheck.git.changes import ChangedFile, changed_files
from turncheck.git.command import GitError
from turncheck.git.commits import current_sha, fetch, has_commit, is_repository, merge_base, resolve

MISSING_SHA = "0123456789abcdef0123456789abcdef01234567"
LONG_TEXT = "".join(
    f"line {number}: enough text to make a rename detectable\n" for number in range(20)
)


@pytest.fixture(autouse=True)
def _no_parent_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plain directory under tmp_path must not be taken for part of an enclosing repository.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def _feature_branch(repo: GitRepo, base_files: dict[str, str]) -> str:
    base = repo.commit_files(base_files, "base")
    repo.branch("feature", checkout=True)
    return base


# --- changed_files -------------------------------------------------------------------------


def test_changed_files_detects_each_status(repo: GitRepo) -> None:
    base = _feature_branch(repo, {"edit.txt": "a\n", "drop.txt": "b\n", "old/name.txt": LONG_TEXT})
    repo.write("edit.txt", "a, edited\n")
    repo.remove("drop.txt")
    repo.rename("old/name.txt", "new/name.txt")
    repo.write("new/name.txt", LONG_TEXT + "one more line\n")
    repo.write("add.txt", "c\n")
    head = repo.commit("changes")

    assert sorted(changed_files(repo.path, base, head) or [], key=lambda f: f.path) == [
        ChangedFile("add.txt", "added"),
        ChangedFile("drop.txt", "removed"),
        ChangedFile("edit.txt", "modified"),
        ChangedFile("new/name.txt", "renamed", previous_path="old/name.txt"),
    ]


def test_changed_files_reports_type_change_as_modified(repo: GitRepo) -> None:
    base = _feature_branch(repo, {"target.txt": "t\n", "link": "a file\n"})
    (repo.path / "link").unlink()
    (repo.path / "link").symlink_to("target.txt")
    head = repo.commit("file becomes a symlink")

    assert changed_files(repo.path, base, head) == [ChangedFile("link", "modified")]


def test_changed_files_handles_unusual_names(repo: GitRepo) -> None:
    names = ["dir with space/a b.eval.yaml", "ünïcødé/テスト.eval.yaml", 'quote"tab\tnew\nline.txt']
    base = _feature_branch(repo, {"keep.txt": "k\n"})
    head = repo.commit_files(dict.fromkeys(names, "x\n"), "add odd names")

    found = changed_files(repo.path, base, head) or []
    assert sorted(found, key=lambda f: f.path) == sorted(
        (ChangedFile(name, "added") for name in names), key=lambda f: f.path
    )


def test_changed_files_uses_the_merge_base(repo: GitRepo) -> None:
    base = _feature_branch(repo, {"shared.txt": "s\n"})
    head = repo.commit_files({"feature.txt": "f\n"}, "feature work")
    repo.checkout("main")
    main_after = repo.commit_files({"main-only.txt": "m\n", "shared.txt": "changed on main\n"})

    assert changed_files(repo.path, main_after, head) == [ChangedFile("feature.txt", "added")]
    assert merge_base(repo.path, main_after, head) == base


def test_changed_files_accepts_ref_names(repo: GitRepo) -> None:
    _feature_branch(repo, {"a.txt": "a\n"})
    repo.commit_files({"b.txt": "b\n"})

    assert changed_files(repo.path, "main", "feature") == [ChangedFile("b.txt", "added")]


def test_changed_files_is_none_for_a_missing_commit(repo: GitRepo) -> None:
    head = repo.commit_files({"a.txt": "a\n"})

    assert changed_files(repo.path, MISSING_SHA, head) is None
    assert changed_files(repo.path, head, MISSING_SHA) is None
    assert changed_files(repo.path, "no-such-branch", head) is None


def test_changed_files_is_none_without_shared_history(repo: GitRepo) -> None:
    main = repo.commit_files({"a.txt": "a\n"})
    repo.orphan("unrelated")
    other = repo.commit_files({"b.txt": "b\n"})

    assert merge_base(repo.path, main, other) is None
    assert changed_files(repo.path, main, other) is None


def test_shallow_clone_lacks_the_base_until_fetched(repo: GitRepo, tmp_path: Path) -> None:
    base = _feature_branch(repo, {"a.txt": "a\n"})
    repo.commit_files({"b.txt": "b\n"})
    head = repo.commit_files({"c.txt": "c\n"})
    clone = repo.clone(tmp_path / "clone", branch="feature", depth=1)

    assert not has_commit(clone.path, base)
    assert changed_files(clone.path, base, head) is None

    assert fetch(clone.path, "origin", [base])
    assert has_commit(clone.path, base)
    assert fetch(clone.path, "origin", ["feature"], depth=5)
    assert changed_files(clone.path, base, head) == [
        ChangedFile("b.txt", "added"),
        ChangedFile("c.txt", "added"),
    ]


def test_fetch_failures_return_false(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit_files({"a.txt": "a\n"})

    assert not fetch(repo.path, "no-such-remote", ["main"])
    assert not fetch(repo.path, str(tmp_path / "nowhere"), ["main"])
    assert not fetch(repo.path, "origin", ["--upload-pack=touch /tmp/pwned"])
    assert not fetch(tmp_path / "not-a-dir", "origin", [])


# --- commits and refs ----------------------------------------------------------------------


def test_commit_queries(repo: GitRepo) -> None:
    first = repo.commit_files({"a.txt": "a\n"})
    second = repo.commit_files({"a.txt": "b\n"})

    assert current_sha(repo.path) == second
    assert resolve(repo.path, "main") == second
    assert resolve(repo.path, "HEAD~1") == first
    assert resolve(repo.path, first[:10]) == first
    assert resolve(repo.path, "no-such-ref") is None
    assert resolve(repo.path, f"{second}^{{tree}}") is None
    assert has_commit(repo.path, first)
    assert not has_commit(repo.path, MISSING_SHA)
    assert merge_base(repo.path, first, second) == first


@pytest.mark.parametrize("rev", ["", "--all", "-h", "a\0b"])
def test_option_like_revisions_are_rejected(repo: GitRepo, rev: str) -> None:
    repo.commit_files({"a.txt": "a\n"})

    with pytest.raises(GitError, match="invalid git revision"):
        resolve(repo.path, rev)


def test_current_sha_of_an_empty_repository_raises(repo: GitRepo) -> None:
    with pytest.raises(GitError, match="git rev-parse failed"):
        current_sha(repo.path)


def test_a_plain_directory_is_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    assert not is_repository(plain)
    assert not is_repository(tmp_path / "does-not-exist")
    for call in (
        lambda: current_sha(plain),
        lambda: has_commit(plain, MISSING_SHA),
        lambda: changed_files(plain, "main", "feature"),
        lambda: list(git.worktree_changes(plain, "HEAD")),
    ):
        with pytest.raises(GitError, match="not a git repository") as raised:
            call()
        assert "\n" not in str(raised.value)


def test_is_repository(repo: GitRepo) -> None:
    assert is_repository(repo.path)
    (repo.path / "sub").mkdir()
    assert is_repository(repo.path / "sub")


def test_missing_git_or_a_timeout_becomes_git_error(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing_git(*args: Any, **kwargs: Any) -> None:
        raise FileNotFoundError("git")

    def too_slow(*args: Any, **kwargs: Any) -> None:
        raise subprocess.TimeoutExpired(["git"], 1)

    monkeypatch.setattr(subprocess, "run", missing_git)
    with pytest.raises(GitError, match="git is not installed"):
        current_sha(repo.path)
    monkeypatch.setattr(subprocess, "run", too_slow)
    with pytest.raises(GitError, match="timed out"):
        current_sha(repo.path)


# --- work trees -----------------------------------------------------------------------------


def test_a_work_tree_holds_the_commit_runs_no_hook_and_goes_away(
        repo: GitRepo, tmp_path: Path) -> None:
    base = repo.commit_files({"a.txt": "base\n", "gone.txt": "only at base\n"})
    repo.commit_files({"a.txt": "head\n", "gone.txt": None})
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch '{tmp_path}/hook-ran'\n", encoding="utf-8")
    hook.chmod(0o755)

    with git.work_tree(repo.path, base) as tree:
        assert (tree / "a.txt").read_text() == "base\n"
        assert (tree / "gone.txt").is_file()
        assert (repo.path / "a.txt").read_text() == "head\n"

    assert not tree.exists() and not tree.parent.exists()
    assert not (tmp_path / "hook-ran").exists()
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_work_tree_refuses_a_file_over_the_limit_by_name(repo: GitRepo) -> None:
    base = repo.commit_files({"small.txt": "x", "data/big.bin": "y" * 1536})

    refused = pytest.raises(git.FileTooLarge, match=r"'data/big\.bin' is 1\.5 KiB at commit")
    with refused, git.work_tree(repo.path, base, max_file_bytes=1024):
        pytest.fail("nothing is checked out")
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 1


# --- the test helper itself ----------------------------------------------------------------


def test_git_repo_helper_ignores_the_callers_git_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = GitRepo(tmp_path / "decoy")
    decoy.commit_files({"decoy.txt": "d\n"})
    monkeypatch.setenv("GIT_DIR", str(decoy.path / ".git"))

    repo = GitRepo(tmp_path / "repo")
    sha = repo.commit_files({"a.txt": "a\n"}, "first")

    assert repo.git("log", "--format=%s %an") == "first Turncheck Tests"
    assert current_sha(repo.path) == sha
    assert current_sha(decoy.path) != sha
