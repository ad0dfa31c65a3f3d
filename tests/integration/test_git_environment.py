"""Issue 46, item 1: git runs with a minimal environment. An app's process that escaped
the run could read a git process's `/proc/<pid>/environ`; git holds no token or key."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.git_repo import GitRepo
from turncheck import git

CREDENTIALS = ("GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "ACTIONS_RUNTIME_TOKEN",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
               "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH")


def test_every_git_process_of_a_work_tree_holds_no_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_git = shutil.which("git")
    assert real_git is not None
    seen = tmp_path / "environments"
    seen.mkdir()
    spy = tmp_path / "bin" / "git"
    spy.parent.mkdir()
    # Records the environment each git process starts with, then is git.
    spy.write_text(f'#!/bin/sh\nenv > "{seen}/$$"\nexec "{real_git}" "$@"\n')
    spy.chmod(0o755)
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit_files({"a.txt": "a\n"}, "base")
    monkeypatch.setenv("PATH", f"{spy.parent}{os.pathsep}{os.environ['PATH']}")
    for name in CREDENTIALS:
        monkeypatch.setenv(name, f"tok_PLANTED-{name}")

    with git.work_tree(repo.path, base) as tree:
        assert (tree / "a.txt").read_text() == "a\n"

    environments = [path.read_text() for path in seen.iterdir()]
    assert len(environments) >= 3  # ls-tree, worktree add, remove, prune
    for environment in environments:
        assert "PLANTED" not in environment
        assert "GIT_TERMINAL_PROMPT=0" in environment
