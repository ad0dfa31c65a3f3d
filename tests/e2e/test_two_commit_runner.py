"""The two-commit runner (`turncheck.sides.two_commit_runner`): `turncheck diff` and the action run
a change's two sides through it, the base side in a `git worktree` of the base commit
that is gone when the run ends, however it ends."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.action_harness import TURNCHECK, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, SUITE, feature_branch_repo
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.github.bundle import bundle_from_json
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.checkout import Checkout
from turncheck.sides.options import RunOptions
from turncheck.sides.two_commit_runner import Commits, Event, SideLoaded, TwoCommitRun

TINY_SUITE = ("metadata:\n  name: tiny\n  model: gpt-4o-mini\nevals:\n  - name: a\n"
              "    prompt: hi\n    checks: [{match: '*'}]\n")
BASE_LINE = re.compile(r"base [0-9a-f]{12}: \w+ mode, in a work tree at (\S+)")


def _worktrees(repo: GitRepo) -> list[str]:
    return [line.removeprefix("worktree ") for line in
            repo.git("worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def _env(tmp: Path) -> dict[str, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


def _diff(repo: GitRepo, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNCHECK), "diff", *args], cwd=repo.path, env=_env(tmp),
                          capture_output=True, text=True, encoding="utf-8", timeout=300,
                          check=False)


def test_diff_and_the_action_give_the_same_comparison_from_a_base_work_tree(
        tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub) -> None:
    repo, base, head = feature_branch_repo(tmp_path / "repo",
                                           suite_text(model.base_url, BASE_EVALS),
                                           suite_text(model.base_url, HEAD_EVALS))
    diffed = _diff(repo, tmp_path / "diff-tmp", base, "--json", str(tmp_path / "diff.json"))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    ran = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           extra_env={"TMPDIR": str(_env(tmp_path / "action-tmp")["TMPDIR"])})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.report is not None

    bundle = bundle_from_json(json.dumps(ran.report).encode())
    assert bundle.base is not None
    from_action = compare_reports(bundle.base, bundle.head, renames=bundle.renames,
                                  removed=bundle.removed)
    from_diff = json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))
    assert from_diff == json.loads(from_action.model_dump_json())
    rows = [(r["name"], r["transition"], r["verdict"])
            for suite in from_diff["suites"] for r in suite["evals"]]
    assert rows == [("multiply", "turn changed", "later-turn"),
                    ("add", "unchanged", "unchanged")]
    # A clean work tree is its HEAD commit: both priced at its time, both naming it.
    assert (from_diff["base_commit"], from_diff["head_commit"]) == (base, head)
    # The base side ran in a work tree of the base commit, which is gone afterwards.
    found = BASE_LINE.search(diffed.stderr)
    assert found is not None, diffed.stderr
    tree = Path(found.group(1))
    assert tree.is_relative_to(tmp_path / "diff-tmp") and not tree.exists()
    assert f"base {base[:12]}: 1 suite, 0 sample files, replay mode, in a work tree" \
        in ran.stdout
    assert _worktrees(repo) == [str(repo.path)]
    assert list((tmp_path / "diff-tmp").iterdir()) == []
    assert list((tmp_path / "action-tmp").iterdir()) == []


def _two_commits(root: Path) -> tuple[GitRepo, str]:
    """A repository whose base commit holds a file the head removed."""
    repo = GitRepo(root)
    suite = TINY_SUITE
    base = repo.commit_files({SUITE: suite, "app/only-at-base.py": "print('base')\n"})
    repo.commit_files({SUITE: suite.replace("hi", "hello"), "app/only-at-base.py": None})
    return repo, base


def _runner(repo: GitRepo, base: str, listener: Callable[[Event], None]) -> TwoCommitRun:
    changes = SuiteChanges(head_suites=[SUITE], base_suites=[SUITE])
    return TwoCommitRun(Checkout(repo.path), Commits(base=base, head=repo.head), changes,
                        RunOptions(), listener=listener)


def test_the_base_side_loads_from_a_checkout_of_the_base_commit(tmp_path: Path) -> None:
    repo, base = _two_commits(tmp_path / "repo")
    seen: list[tuple[str, bool, str]] = []

    def look(event: Event) -> None:
        if isinstance(event, SideLoaded) and event.side == "base":
            at = GitRepo(event.tree, init=False).sha()
            seen.append((at, (event.tree / "app/only-at-base.py").is_file(), str(event.tree)))

    reports = _runner(repo, base, look).run()

    [(at, has_base_file, tree)] = seen
    assert (at, has_base_file) == (base, True)
    assert reports.base is not None and reports.base.suites[0].path == SUITE
    assert not Path(tree).exists() and _worktrees(repo) == [str(repo.path)]


def test_both_sides_of_a_two_commit_run_name_one_run_and_another_run_another(
        tmp_path: Path) -> None:
    # `turncheck diff` and the action sample both sides in one run: `compare` then tests
    # them as exchangeable; two runs of it are two runs.
    repo, base = _two_commits(tmp_path / "repo")
    first, second = _runner(repo, base, _ignore).run(), _runner(repo, base, _ignore).run()
    assert first.base is not None and second.base is not None
    assert first.head.run_id is not None and first.base.run_id == first.head.run_id
    assert second.base.run_id == second.head.run_id != first.head.run_id


def _ignore(event: Event) -> None:
    del event


@pytest.mark.parametrize("failure", [RuntimeError("a bug"), KeyboardInterrupt()])
def test_the_base_work_tree_is_removed_when_the_run_fails(
        tmp_path: Path, failure: BaseException) -> None:
    repo, base = _two_commits(tmp_path / "repo")
    trees: list[Path] = []

    def fail(event: Event) -> None:
        if isinstance(event, SideLoaded) and event.side == "base":
            trees.append(event.tree)
            raise failure

    with pytest.raises(type(failure)):
        _runner(repo, base, fail).run()
    assert trees and not trees[0].exists()
    assert _worktrees(repo) == [str(repo.path)]


def test_sigterm_during_diff_removes_the_base_work_tree(
        tmp_path: Path, model: ScriptedServer) -> None:
    repo, base, _ = feature_branch_repo(tmp_path / "repo",
                                        suite_text(model.base_url, BASE_EVALS),
                                        suite_text(model.base_url, HEAD_EVALS))
    model.set_latency(60)  # every live call is in flight when the signal comes
    process = subprocess.Popen(
        [str(TURNCHECK), "diff", base, "--mode", "live"], cwd=repo.path,
        env={**_env(tmp_path / "tmp"), "OPENAI_API_KEY": "sk-test-not-a-key"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    assert process.stderr is not None
    seen = ""
    deadline = time.monotonic() + 60
    while (found := BASE_LINE.search(seen)) is None and time.monotonic() < deadline:
        seen += process.stderr.readline()
    assert found is not None, seen
    tree = Path(found.group(1))
    assert tree.is_dir()
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    rest = process.communicate(timeout=60)[1]
    assert process.returncode == 128 + signal.SIGTERM, seen + rest
    assert "Traceback" not in seen + rest
    # It says what it kept: nothing (never "the partial report ... were kept").
    assert "nothing was written" in rest and "partial report" not in rest.replace(
        "keeps no partial one", "")
    assert not tree.exists() and _worktrees(repo) == [str(repo.path)]
    assert list((tmp_path / "tmp").iterdir()) == []


def _stage_zeros(repo: GitRepo, path: str, size: int) -> None:
    """Stage a `size`-byte file of zeros at `path` without writing it anywhere but into
    `.git`, as the loose object git would make of it (2 GiB of zeros take 9 MB)."""
    header = f"blob {size}\0".encode()
    digest, packer = hashlib.sha1(header), zlib.compressobj(1)
    chunks, zeros = [packer.compress(header)], bytes(1 << 24)
    for _ in range(size // len(zeros)):
        digest.update(zeros)
        chunks.append(packer.compress(zeros))
    chunks.append(packer.flush())
    sha = digest.hexdigest()
    target = repo.path / ".git" / "objects" / sha[:2] / sha[2:]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(chunks))
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{sha},{path}")


def test_a_2_gib_file_in_the_base_commit_is_a_clear_error_in_little_memory(
        tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    suite = TINY_SUITE
    repo.write(SUITE, suite)
    repo.git("add", "--all")
    cassette = SUITE.replace(".eval.yaml", ".eval.cassette.yaml")
    _stage_zeros(repo, cassette, 2 << 30)
    repo.git("commit", "--quiet", "--no-verify", "-m", "a suite whose cassette is 2 GiB")
    base = repo.head
    repo.write(SUITE, suite.replace("hi", "hello"))

    peak_file = tmp_path / "peak"
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parents[1] / "support" / "maxrss.py"), str(peak_file),
         str(TURNCHECK), "diff", base], cwd=repo.path, env=_env(tmp_path / "tmp"),
        capture_output=True, text=True, encoding="utf-8", timeout=300, check=False)

    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (f"turncheck: error: cannot check out the base commit: '{cassette}' is 2 GiB at "
            f"commit {base[:12]}, over the 100 MiB limit") in done.stderr
    assert int(peak_file.read_text(encoding="utf-8")) < 200 * 1024  # KiB
    assert _worktrees(repo) == [str(repo.path)]


def test_the_action_refuses_a_base_commit_with_an_oversized_file_by_name(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write(SUITE, TINY_SUITE)
    repo.git("add", "--all")
    _stage_zeros(repo, "data/huge.bin", 101 << 20)
    repo.git("commit", "--quiet", "--no-verify", "-m", "a 101 MiB file beside the suite")
    base = repo.head
    repo.branch("feature", checkout=True)
    head = repo.commit_files({SUITE: TINY_SUITE.replace("hi", "hello")})

    ran = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)

    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ("::error title=turncheck::'data/huge.bin' is 101 MiB at commit "
            f"{base[:12]}, over the 100 MiB limit") in ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr
    assert _worktrees(repo) == [str(repo.path)]
