"""Tests for turncheck.github.git against real throwaway repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.git_repo import GitRepo
from turncheck.github import git
from turncheck.github.client import ChangedFile
from turncheck.github.git import (
    GitError,
    changed_files,
    current_sha,
    export_paths,
    export_suites,
    fetch,
    has_commit,
    is_repository,
    merge_base,
    resolve,
)

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
        lambda: export_paths(plain, "HEAD", ["a.txt"], tmp_path / "out"),
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


# --- export_paths / export_suites ----------------------------------------------------------


def test_export_paths_writes_the_content_at_the_commit(repo: GitRepo, tmp_path: Path) -> None:
    exact = b"crlf\r\nno final newline \xff\xfe binary"
    base = repo.commit_files({"suites/a.eval.yaml": exact, "b.txt": "b at base\n"})
    repo.commit_files({"suites/a.eval.yaml": "later\n", "b.txt": None, "new.txt": "n\n"})
    repo.write("suites/a.eval.yaml", "uncommitted\n")
    dest = tmp_path / "out"

    missing = export_paths(repo.path, base, ["suites/a.eval.yaml", "b.txt", "new.txt"], dest)

    assert missing == ["new.txt"]
    assert (dest / "suites/a.eval.yaml").read_bytes() == exact
    assert (dest / "b.txt").read_bytes() == b"b at base\n"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "b.txt",
        "suites/a.eval.yaml",
    ]


def test_export_paths_counts_directories_as_missing(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit_files({"dir/a.txt": "a\n"})

    assert export_paths(repo.path, sha, ["dir", "dir/"], tmp_path / "out") == ["dir", "dir/"]
    assert not (tmp_path / "out" / "dir").exists()


def test_export_paths_takes_names_literally(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit_files({"a[1].yaml": "bracket\n", "a1.yaml": "plain\n", "b.yaml": "b\n"})
    dest = tmp_path / "out"

    assert export_paths(repo.path, sha, ["a[1].yaml", "*.yaml", ":(glob)**"], dest) == [
        "*.yaml",
        ":(glob)**",
    ]
    assert [p.name for p in dest.iterdir()] == ["a[1].yaml"]
    assert (dest / "a[1].yaml").read_text() == "bracket\n"


def test_export_paths_handles_unusual_names(repo: GitRepo, tmp_path: Path) -> None:
    names = ["dir with space/a b.eval.yaml", "ünïcødé/テスト.eval.yaml", 'quote"tab\tnew\nline.txt']
    sha = repo.commit_files({name: name for name in names})

    assert export_paths(repo.path, sha, names, tmp_path / "out") == []
    for name in names:
        assert (tmp_path / "out" / name).read_text() == name


def test_export_paths_accepts_equivalent_spellings(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit_files({"dir/a.txt": "a\n"})

    assert export_paths(repo.path, sha, ["./dir//a.txt", "dir/a.txt"], tmp_path / "out") == []
    assert (tmp_path / "out/dir/a.txt").read_text() == "a\n"


def test_export_paths_chunks_long_path_lists(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"f{number}.txt": f"{number}\n" for number in range(7)}
    sha = repo.commit_files(files)
    monkeypatch.setattr(git, "_MAX_CHUNK_PATHS", 2)

    assert export_paths(repo.path, sha, [*files, "gone.txt"], tmp_path / "out") == ["gone.txt"]
    for path, content in files.items():
        assert (tmp_path / "out" / path).read_text() == content


def test_export_paths_survives_more_paths_than_argv_holds(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit_files({"a.txt": "a\n"})
    absent = [f"absent/{'x' * 200}-{number}.eval.yaml" for number in range(12_000)]

    missing = export_paths(repo.path, sha, ["a.txt", *absent], tmp_path / "out")

    assert missing == absent
    assert (tmp_path / "out/a.txt").read_text() == "a\n"


def test_export_paths_includes_export_ignored_files(repo: GitRepo, tmp_path: Path) -> None:
    sha = repo.commit_files({".gitattributes": "*.eval.yaml export-ignore\n", "a.eval.yaml": "a\n"})

    assert export_paths(repo.path, sha, ["a.eval.yaml"], tmp_path / "out") == []
    assert (tmp_path / "out/a.eval.yaml").read_text() == "a\n"


def test_export_paths_refuses_links_out_of_dest(repo: GitRepo, tmp_path: Path) -> None:
    (repo.path / "escape.eval.yaml").symlink_to("/etc/passwd")
    sha = repo.commit()

    with pytest.raises(GitError, match="cannot write the files of commit"):
        export_paths(repo.path, sha, ["escape.eval.yaml"], tmp_path / "out")


@pytest.fixture
def python_without_extraction_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python before 3.11.4 (Debian 12's 3.11.2) has no tarfile extraction filters."""
    import tarfile

    monkeypatch.delattr(tarfile, "data_filter", raising=False)


@pytest.mark.usefixtures("python_without_extraction_filters")
def test_export_paths_works_on_a_python_without_extraction_filters(
    repo: GitRepo, tmp_path: Path
) -> None:
    (repo.path / "prompts").mkdir()
    (repo.path / "prompts/agent.md").write_text("be brief\n")
    (repo.path / "prompts/alias.md").symlink_to("agent.md")
    (repo.path / "run.sh").write_text("#!/bin/sh\n")
    (repo.path / "run.sh").chmod(0o755)
    sha = repo.commit()

    out = tmp_path / "out"
    assert export_paths(repo.path, sha, ["prompts/agent.md", "prompts/alias.md", "run.sh"],
                        out) == []
    assert (out / "prompts/alias.md").is_symlink()
    assert (out / "prompts/alias.md").read_text() == "be brief\n"
    assert (out / "run.sh").stat().st_mode & 0o100


@pytest.mark.usefixtures("python_without_extraction_filters")
@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside.txt"])
def test_without_extraction_filters_links_out_of_dest_are_still_refused(
    repo: GitRepo, tmp_path: Path, target: str
) -> None:
    (repo.path / "escape.eval.yaml").symlink_to(target)
    (repo.path / "fine.txt").write_text("f\n")
    sha = repo.commit()

    with pytest.raises(GitError, match="a link leading outside"):
        export_paths(repo.path, sha, ["fine.txt", "escape.eval.yaml"], tmp_path / "out")
    assert not (tmp_path / "out" / "fine.txt").exists()  # refused before any write


def test_extract_confined_refuses_names_outside_and_special_files(tmp_path: Path) -> None:
    import io
    import tarfile

    for name, kind in (("../up.txt", tarfile.REGTYPE), ("/abs.txt", tarfile.REGTYPE),
                       ("dev", tarfile.CHRTYPE)):
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.type = kind
            tar.addfile(info, io.BytesIO(b""))
        data.seek(0)
        with tarfile.open(fileobj=data, mode="r:") as tar, pytest.raises(tarfile.TarError):
            git.extract_confined(tar, tmp_path / "out")
    assert not (tmp_path / "up.txt").exists() and not (tmp_path / "out").exists()


def test_export_paths_from_a_subdirectory_uses_root_relative_paths(
    repo: GitRepo, tmp_path: Path
) -> None:
    sha = repo.commit_files({"top.txt": "t\n", "sub/inner.txt": "i\n"})

    missing = export_paths(repo.path / "sub", sha, ["top.txt", "sub/inner.txt"], tmp_path / "out")

    assert missing == []
    assert (tmp_path / "out/top.txt").read_text() == "t\n"
    assert (tmp_path / "out/sub/inner.txt").read_text() == "i\n"


def test_export_paths_needs_the_commit(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit_files({"a.txt": "a\n"})

    with pytest.raises(GitError, match="fetch-depth: 0"):
        export_paths(repo.path, MISSING_SHA, ["a.txt"], tmp_path / "out")


@pytest.mark.parametrize("bad", ["../x.yaml", "a/../../x.yaml", "a/..", "/etc/passwd", "", "."])
def test_unsafe_paths_are_rejected(repo: GitRepo, tmp_path: Path, bad: str) -> None:
    sha = repo.commit_files({"a.eval.yaml": "a\n"})

    with pytest.raises(GitError, match="refusing path"):
        export_paths(repo.path, sha, ["a.eval.yaml", bad], tmp_path / "out")
    with pytest.raises(GitError, match="refusing path"):
        export_suites(repo.path, sha, [bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_suites_brings_cassettes_along(repo: GitRepo, tmp_path: Path) -> None:
    base = repo.commit_files(
        {
            "evals/math.eval.yaml": "math\n",
            "evals/math.eval.cassette.yaml": "recorded\n",
            "evals/chat.eval.yml": "chat\n",
            "evals/chat.eval.cassette.yaml": "recorded chat\n",
            "evals/plain.eval.yaml": "no cassette\n",
        }
    )
    dest = tmp_path / "out"

    suites = ["evals/math.eval.yaml", "evals/chat.eval.yml", "evals/plain.eval.yaml"]

    missing = export_suites(repo.path, base, [*suites, "evals/new.eval.yaml"], dest)

    assert missing == ["evals/new.eval.yaml"]
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "evals/chat.eval.cassette.yaml",
        "evals/chat.eval.yml",
        "evals/math.eval.cassette.yaml",
        "evals/math.eval.yaml",
        "evals/plain.eval.yaml",
    ]
    assert (dest / "evals/math.eval.cassette.yaml").read_text() == "recorded\n"


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
