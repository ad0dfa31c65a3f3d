"""The action's budget inputs and `mode: estimate` (docs/budgets.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support.action_harness import PR, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.support.scripted_server import ScriptedServer


def _repo(root: Path, server: ScriptedServer) -> tuple[GitRepo, str, str]:
    return feature_branch_repo(root, suite_text(server.base_url, BASE_EVALS),
                               suite_text(server.base_url, HEAD_EVALS),
                               path="evals/math.eval.yaml")


def test_mode_estimate_posts_the_estimate_and_calls_no_model(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = _repo(tmp_path / "workspace", model)
    sent = len(model.requests)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "estimate"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(model.requests) == sent  # nothing was run
    [comment] = github_fake.comments_on(PR)
    assert "estimate of a live run" in comment.body
    assert "Worst\\-case cost" in comment.body or "Worst-case cost" in comment.body
    assert "math" in comment.body


def test_live_run_over_budget_says_so_in_the_check_and_comment(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = _repo(tmp_path / "workspace", model)
    sent = len(model.requests)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "max-live-tokens": "0"},
                           extra_env={"OPENAI_API_KEY": "sk-test-FAKE"})
    assert len(model.requests) == sent, run.stdout + run.stderr  # no call fits in 0 tokens
    [check] = github_fake.check_runs.values()
    assert "budget stopped the run" in check.output["title"]
    # Evals that never ran are not vouched for: grey, never green, unless `budget` gates.
    assert check.conclusion == "neutral"
    [comment] = github_fake.comments_on(PR)
    assert "Budget stopped the run" in comment.body.replace("\\", "")


def test_fail_on_budget_fails_the_check_when_a_budget_stops_evals(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = _repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "max-live-tokens": "0",
                            "fail-on": "invalid,error,regression,broken,budget"},
                           extra_env={"OPENAI_API_KEY": "sk-test-FAKE"})
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "failure", run.stdout + run.stderr
    assert check.output["title"].startswith("❌ budget stopped the run")


def test_bad_budget_input_is_reported(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = _repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"max-live-tokens": "lots", "max-cost-usd": "-1"})
    assert run.returncode != 0
    assert "input max-live-tokens" in run.stdout + run.stderr
    assert "input max-cost-usd" in run.stdout + run.stderr
