"""Issue 33, item 1: the gate `turncheck init` writes is the action's default, so in a
repository set up by `init` an eval already failing on main does not fail every pull
request, while a new eval with no recording, or a pull request where everything errors,
does fail the check (and the heading says why)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.action_harness import PR, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import FAILING_EVALS, PASSING_EVALS, SUITE, commit_recorded
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.policy import DEFAULT_FAIL_ON, parse_fail_on
from turncheck.config import load_config

TURNCHECK = [sys.executable, "-m", "turncheck"]
# Not recorded on main: the pull request adds it without recording it.
JAPAN_EVAL = (
    "  - name: japan\n"
    "    prompt: What is the capital of Japan?\n"
    "    checks: [{match: '*Tokyo*'}]\n"
)


def turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TURNCHECK, *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", timeout=180, check=False)


def main_with_a_failing_eval(root: Path, model: ScriptedServer) -> tuple[GitRepo, str]:
    """A repository set up by `init` whose main branch has a recorded suite in which
    `capital` fails (the model answers Lyon); checked out on a new `feature` branch."""
    repo = GitRepo(root)
    repo.write(SUITE, suite_text(model.base_url, PASSING_EVALS + FAILING_EVALS))
    done = turncheck(repo.path, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    base = commit_recorded(repo, SUITE, suite_text(model.base_url, PASSING_EVALS + FAILING_EVALS),
                           "main: suites, cassettes and init's files")
    repo.branch("feature", checkout=True)
    return repo, base


def heading(markdown: Path) -> str:
    return next(line for line in markdown.read_text(encoding="utf-8").splitlines()
                if line.startswith("#"))


def test_init_writes_the_actions_default_gate(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    assert turncheck(repo.path, "init").returncode == 0
    loaded = load_config(repo.path)
    assert loaded.config.fail_on is not None
    assert parse_fail_on(loaded.config.fail_on) == DEFAULT_FAIL_ON
    config = (repo.path / "turncheck.toml").read_text(encoding="utf-8")
    assert "already failing on the default branch" in config  # the choice, explained


def test_a_pull_request_that_changes_nothing_passes_though_an_eval_fails_on_main(
    tmp_path: Path, model: ScriptedServer,
) -> None:
    repo, base = main_with_a_failing_eval(tmp_path / "repo", model)
    text = (repo.path / SUITE).read_text(encoding="utf-8")
    repo.commit_files({SUITE: "# reviewed; nothing to change\n" + text}, "a comment")
    diffed = turncheck(repo.path, "diff", base, "--markdown", str(tmp_path / "pr.md"))
    assert diffed.returncode == 0, diffed.stdout + diffed.stderr
    assert "Exit 0" in diffed.stdout
    assert not heading(tmp_path / "pr.md").startswith("## ❌")


def test_a_new_eval_with_no_recording_fails_and_the_heading_names_it(
    tmp_path: Path, model: ScriptedServer,
) -> None:
    repo, base = main_with_a_failing_eval(tmp_path / "repo", model)
    repo.commit_files({SUITE: suite_text(model.base_url,
                                         PASSING_EVALS + FAILING_EVALS + JAPAN_EVAL)},
                      "a new eval, not recorded")
    diffed = turncheck(repo.path, "diff", base, "--markdown", str(tmp_path / "pr.md"))
    assert diffed.returncode == 1, diffed.stdout + diffed.stderr
    title = heading(tmp_path / "pr.md")
    assert title.startswith("## ❌") and "capital" not in title, title
    assert "japan: no recording" in title, title  # the eval, and what it lacks


def test_a_pull_request_where_every_eval_errors_fails(
    tmp_path: Path, model: ScriptedServer,
) -> None:
    repo, base = main_with_a_failing_eval(tmp_path / "repo", model)
    reworded = (PASSING_EVALS + FAILING_EVALS).replace("What is", "Tell me")
    repo.commit_files({SUITE: suite_text(model.base_url, reworded)}, "prompts reworded, "
                      "not re-recorded")
    diffed = turncheck(repo.path, "diff", base, "--markdown", str(tmp_path / "pr.md"))
    assert diffed.returncode == 1, diffed.stdout + diffed.stderr
    assert "2 evals errored" in diffed.stdout, diffed.stdout
    assert heading(tmp_path / "pr.md").startswith("## ❌")


def test_the_action_fails_the_check_for_an_unrecorded_eval_and_names_it(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub,
) -> None:
    repo, base = main_with_a_failing_eval(tmp_path / "repo", model)
    head = repo.commit_files({SUITE: suite_text(model.base_url,
                                                PASSING_EVALS + FAILING_EVALS + JAPAN_EVAL)},
                             "a new eval, not recorded")
    ran = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    [check] = [c for c in github_fake.check_runs_named("turncheck") if c.head_sha == head]
    assert check.conclusion == "failure"
    assert "japan: no recording" in check.output["title"], check.output["title"]
    [comment] = github_fake.comments_on(PR)
    first = next(line for line in comment.body.splitlines() if line.startswith("#"))
    assert "japan" in first and "capital" not in first, first
