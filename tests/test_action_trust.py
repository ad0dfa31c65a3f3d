"""Issue 10, item 2: a fork can never turn the required `turncheck` check green.

The fork's own run uploads its report; the trusted `workflow_run` poster posts it as an
unverified report (never `success` on `turncheck`) and only to the run's own pull
request. The real verdict comes from a maintainer-approved `pull_request_target` run
that reads the PR's files as data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.action_harness import (
    PR,
    REPOSITORY,
    ActionRun,
    pull_request_event,
    run_action,
    run_pull_request,
    suite_text,
    zipped,
)
from tests.git_repo import GitRepo
from tests.github_fake import FakeGitHub
from tests.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.scripted_server import ScriptedServer
from turncheck.github.action import Job
from turncheck.github.context import read_context
from turncheck.github.inputs import read_inputs

FORK = "someone/widgets"
REQUIRED = "turncheck"
UNVERIFIED = "turncheck (unverified fork report)"
LABEL = "turncheck:trusted"
FAILING = {"fail-on": "likely-regression"}  # the PR's one-sample turn regression fails it


@pytest.fixture
def pr_repo(tmp_path: Path, model: ScriptedServer) -> tuple[GitRepo, str, str]:
    return feature_branch_repo(tmp_path / "workspace", suite_text(model.base_url, BASE_EVALS),
                               suite_text(model.base_url, HEAD_EVALS))


def fork_run_report(repo: GitRepo, tmp_path: Path, github: FakeGitHub, base: str,
                    head: str) -> dict[str, Any]:
    """What the fork's own pull_request run leaves: the report file (no write token)."""
    github.writes_forbidden = True
    run = run_pull_request(repo, tmp_path / "fork-run", github, base, head, FAILING, fork=True)
    github.writes_forbidden = False
    assert run.returncode == 1, run.stdout + run.stderr  # the genuine verdict: a regression
    github.pull_head_repos[PR] = FORK
    assert run.report is not None
    return run.report


def all_pass(report: dict[str, Any]) -> dict[str, Any]:
    """The report as an attacker edits it: every eval passes on turn 1, base as head."""
    edited = json.loads(json.dumps(report))
    for suite in edited["head"]["suites"]:
        for item in suite["evals"]:
            item.update(status="pass", passed_on_turn=1, error=None)
    edited["base"] = json.loads(json.dumps(edited["head"]))
    return edited


def post(tmp_path: Path, github: FakeGitHub, report: dict[str, Any], head: str,
         run: dict[str, Any] | None = None, run_id: int = 99) -> ActionRun:
    """The workflow_run poster on the fork run `run_id` that uploaded `report`."""
    path = tmp_path / f"artifact-{run_id}" / "turncheck-report.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(report))
    github.artifacts[run_id] = [("turncheck-report", zipped(path))]
    event = {
        "workflow_run": {"id": run_id, "head_sha": head, "head_branch": "feature",
                         "event": "pull_request", "conclusion": "success",
                         "pull_requests": [], "head_repository": {"full_name": FORK},
                         **(run or {})},
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
    }
    poster = GitRepo(tmp_path / f"poster-{run_id}")  # the poster checks nothing out
    poster.commit("empty")
    return run_action(poster, tmp_path / f"poster-runner-{run_id}", github.base_url,
                      "workflow_run", event, FAILING)


def test_a_fork_report_edited_to_all_pass_never_passes_the_required_check(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    forged = all_pass(fork_run_report(repo, tmp_path, github_fake, base, head))

    run = post(tmp_path, github_fake, forged, head)
    assert run.returncode == 0, run.stdout + run.stderr  # the forged figures do pass
    assert "Traceback" not in run.stdout + run.stderr
    # The required check is held for a maintainer, never passed.
    [required] = github_fake.check_runs_named(REQUIRED)
    assert (required.head_sha, required.conclusion) == (head, "action_required")
    assert LABEL in required.output["summary"]
    # The fork's figures are shown under their own name, neutral at best.
    [unverified] = github_fake.check_runs_named(UNVERIFIED)
    assert unverified.conclusion == "neutral"
    assert unverified.output["title"].startswith("unverified: ")
    assert not [s for s in github_fake.statuses if s["state"] == "success"]
    [comment] = github_fake.comments_on(PR)
    assert "[!CAUTION]" in comment.body and "Unverified report" in comment.body
    assert f"run 99 of {FORK}" in comment.body and f"`{LABEL}`" in comment.body


def test_a_fork_report_failing_on_its_own_shows_failure_but_not_on_the_required_check(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    run = post(tmp_path, github_fake, report, head)
    assert run.returncode == 1, run.stdout + run.stderr
    assert [c.conclusion for c in github_fake.check_runs_named(UNVERIFIED)] == ["failure"]
    assert [c.conclusion for c in github_fake.check_runs_named(REQUIRED)] == ["action_required"]


def test_a_report_naming_another_pull_request_is_not_posted_there(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    report = all_pass(fork_run_report(repo, tmp_path, github_fake, base, head))
    # PR 8 is someone else's, from this repository, at the very same commit.
    github_fake.pull_head_shas[8] = head
    report["pull_number"] = 8

    run = post(tmp_path, github_fake, report, head)
    assert run.returncode == 1
    assert f"whose head is in {REPOSITORY}, but run 99 built {FORK}" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert github_fake.comments == [] and not github_fake.check_runs

    # Same fork, but the run's payload names its pull request: #7, not #8.
    github_fake.pull_head_repos[8] = FORK
    named = post(tmp_path, github_fake, report, head, {"pull_requests": [{"number": PR}]},
                 run_id=100)
    assert named.returncode == 1
    assert "names pull request #8, but run 100 ran for #7" in named.stdout
    assert github_fake.comments == [] and not github_fake.check_runs


def test_the_poster_only_posts_pull_request_runs(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    run = post(tmp_path, github_fake, report, head, {"event": "push"})
    assert run.returncode == 1 and "only posts reports of pull_request runs" in run.stdout
    assert github_fake.comments == [] and not github_fake.check_runs


# ---- the maintainer-approved trusted run ----------------------------------------------------


def trusted_run(tmp_path: Path, repo: GitRepo, github: FakeGitHub, base: str, head: str,
                action: str = "labeled", label: str = LABEL,
                inputs: dict[str, str] | None = None) -> ActionRun:
    """pull_request_target: the default branch checked out in the workspace, the PR's
    commit checked out as data in `pr/`."""
    workspace = GitRepo(tmp_path / "trusted")
    if not (workspace.path / "pr").exists():
        workspace.write("README.md", "default branch")
        workspace.commit("default branch")
        repo.clone(workspace.path / "pr").checkout(head)
    event = {**pull_request_event(PR, base, head, fork=True), "action": action,
             "label": {"name": label}}
    return run_action(workspace, tmp_path / f"trusted-runner-{action}", github.base_url,
                      "pull_request_target", event,
                      {"pr-checkout": "pr", **FAILING, **(inputs or {})})


def test_a_labeled_trusted_run_gives_the_real_verdict_and_the_poster_keeps_it(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    forged = all_pass(fork_run_report(repo, tmp_path, github_fake, base, head))

    trusted = trusted_run(tmp_path, repo, github_fake, base, head)
    assert trusted.returncode == 1, trusted.stdout + trusted.stderr  # the real regression
    [verdict] = github_fake.check_runs_named(REQUIRED)
    assert (verdict.head_sha, verdict.conclusion) == (head, "failure")
    [comment] = github_fake.comments_on(PR)
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in comment.body
    assert "Unverified" not in comment.body

    # The forged report's poster runs late: it must not cover the verdict.
    post(tmp_path, github_fake, forged, head)
    assert [c.conclusion for c in github_fake.check_runs_named(REQUIRED)] == ["failure"]


def test_a_trusted_run_without_the_maintainers_label_gives_no_verdict(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    fork_run_report(repo, tmp_path, github_fake, base, head)
    for action, label in (("synchronize", LABEL), ("labeled", "bug")):
        run = trusted_run(tmp_path, repo, github_fake, base, head, action, label)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "a trusted run gives a verdict only when a maintainer adds" in run.stdout
    assert not github_fake.check_runs and not github_fake.comments


@pytest.mark.parametrize(("inputs", "message"), [
    ({"pr-checkout": ""}, "pass it as `pr-checkout`"),
    ({"mode": "live"}, "only replays cassettes"),
])
def test_a_trusted_run_refuses_to_read_the_pr_unsafely(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub,
    inputs: dict[str, str], message: str,
) -> None:
    repo, base, head = pr_repo
    run = trusted_run(tmp_path, repo, github_fake, base, head, inputs=inputs)
    assert run.returncode == 1 and message in run.stdout
    assert not github_fake.check_runs and not github_fake.comments


def test_a_trusted_run_hands_suites_none_of_the_runners_variables(tmp_path: Path) -> None:
    env = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_REPOSITORY": REPOSITORY,
           "INPUT_GITHUB-TOKEN": "ghs_write", "GITHUB_TOKEN": "ghs_write",
           "ACTIONS_RUNTIME_TOKEN": "x", "RUNNER_TEMP": "/tmp", "OPENAI_API_KEY": "sk-1"}
    job = Job(read_context(env), read_inputs(env), env)
    assert job.settings("replay", None, None).env == {"OPENAI_API_KEY": "sk-1"}
    same_repo = Job(read_context({**env, "GITHUB_EVENT_NAME": "pull_request"}),
                    read_inputs(env), env)
    assert same_repo.settings("replay", None, None).env == env  # unchanged elsewhere


def test_a_fork_run_with_a_writable_token_posts_only_an_unverified_report(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    # e.g. a private repository that sends write tokens to fork workflows: the fork's
    # own run (its workflow file, its cassettes) still cannot pass the required check.
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"}, fork=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [c.conclusion for c in github_fake.check_runs_named(REQUIRED)] == ["action_required"]
    assert [c.conclusion for c in github_fake.check_runs_named(UNVERIFIED)] == ["neutral"]
    [comment] = github_fake.comments_on(PR)
    assert f"Unverified report** from the fork {FORK}" in comment.body
