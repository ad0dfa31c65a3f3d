"""A small builder for throwaway git repositories in tests.

    repo = GitRepo(tmp_path / "repo")
    base = repo.commit_files({"math.eval.yaml": "...", "notes.txt": "..."}, "base")
    repo.branch("feature", checkout=True)
    head = repo.commit_files({"math.eval.yaml": "changed", "notes.txt": None}, "edit")

`None` as content removes a file. Git runs without global or system configuration,
with a fixed identity, no signing and `main` as the initial branch, so tests do not
depend on the machine's git setup. Contents are written byte for byte (no newline
translation); `str` contents are encoded as UTF-8.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

_CONFIG = (
    "-c",
    "user.name=Turncheck Tests",
    "-c",
    "user.email=tests@turncheck.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "tag.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
    "-c",
    "core.autocrlf=false",
)

Content = str | bytes


def _git_env() -> dict[str, str]:
    # Drop every inherited GIT_* variable: a GIT_DIR set by a hook running the tests
    # would make these commands act on another repository.
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    return env


def run_git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` with the tests' configuration; its stdout without the final newline."""
    result = subprocess.run(
        ["git", *_CONFIG, *args],
        cwd=cwd,
        env=_git_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr.decode().strip()}")
    return result.stdout.decode().removesuffix("\n")


class GitRepo:
    """A work tree at `path`, created (with `git init`) unless `init=False`."""

    def __init__(self, path: Path, *, init: bool = True) -> None:
        self.path = path
        if init:
            path.mkdir(parents=True, exist_ok=True)
            self.git("init", "--quiet")

    def git(self, *args: str) -> str:
        return run_git(self.path, *args)

    @property
    def head(self) -> str:
        return self.sha("HEAD")

    def sha(self, ref: str = "HEAD") -> str:
        return self.git("rev-parse", "--verify", f"{ref}^{{commit}}")

    def write(self, path: str, content: Content) -> Path:
        target = self.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
        return target

    def remove(self, path: str) -> None:
        self.git("rm", "-r", "--quiet", "--", path)

    def rename(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", "--", old, new)

    def commit(self, message: str = "commit") -> str:
        """Commit everything in the work tree (even nothing); the new commit's SHA."""
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
        return self.head

    def commit_files(self, files: Mapping[str, Content | None], message: str = "commit") -> str:
        """Write (or, for None, remove) `files`, then commit everything."""
        for path, content in files.items():
            if content is None:
                self.remove(path)
            else:
                self.write(path, content)
        return self.commit(message)

    def branch(self, name: str, start: str = "HEAD", *, checkout: bool = False) -> None:
        self.git("branch", "--quiet", name, start)
        if checkout:
            self.checkout(name)

    def checkout(self, ref: str) -> None:
        self.git("checkout", "--quiet", ref)

    def orphan(self, name: str) -> None:
        """Switch to a new branch with no history and an empty work tree."""
        self.git("checkout", "--quiet", "--orphan", name)
        self.git("rm", "-r", "--quiet", "--force", "--ignore-unmatch", ".")

    def clone(self, dest: Path, *, branch: str | None = None, depth: int | None = None) -> GitRepo:
        """Clone over file:// (so `depth` makes a shallow clone, like actions/checkout)."""
        args = ["clone", "--quiet"]
        if branch is not None:
            args += ["--branch", branch]
        if depth is not None:
            args += ["--depth", str(depth)]
        dest.parent.mkdir(parents=True, exist_ok=True)
        run_git(dest.parent, *args, self.path.resolve().as_uri(), str(dest))
        return GitRepo(dest, init=False)
