"""The action end to end: real git history, the real entrypoint, GitHub as a local fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.action_harness import (
    PR,
    TOKEN,
    record,
    run_action,
    run_pull_request,
    suite_text,
    zipped,
)
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.support.scripted_server import ScriptedServer


@pytest.fixture
def pr_repo(tmp_path: Path, model: ScriptedServer) -> tuple[GitRepo, str, str]:
    return feature_branch_repo(tmp_path / "workspace", suite_text(model.base_url, BASE_EVALS),
                               suite_text(model.base_url, HEAD_EVALS))


def test_turn_change_and_cost_delta_in_one_updating_comment(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    inputs = {"fail-on": "likely-regression", "cost-threshold-percent": "10"}
    first = run_pull_request(repo, tmp_path / "runner", github_fake, base, head, inputs)
    assert first.returncode == 1, first.stdout + first.stderr
    [comment] = github_fake.comments_on(PR)
    body = comment.body
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in body
    assert "+$" in body  # the cost delta of the extra turn
    assert "Cost alert" in body
    assert "<!-- turncheck:comment -->" in body
    [check] = github_fake.check_runs.values()
    assert (check.head_sha, check.conclusion) == (head, "failure")
    assert first.outputs["passed"] == "2" and first.outputs["failed"] == "0"
    assert float(first.outputs["cost-delta"]) > 0
    assert first.outputs["comment-url"] and first.outputs["report-path"]
    assert "turn 2" in first.summary
    assert TOKEN not in first.stdout + first.summary + json.dumps(first.report)

    second = run_pull_request(repo, tmp_path / "runner", github_fake, base, head, inputs)
    assert second.returncode == 1
    assert len(github_fake.comments_on(PR)) == 1
    assert github_fake.requests_matching("PATCH", r"/issues/comments/\d+")


def test_provider_keys_are_masked_and_never_written(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    keys = {"OPENROUTER_API_KEY": "sk-or-v1-SECRET-0001", "OPENAI_API_KEY": "sk-SECRET-0002",
            "ANTHROPIC_API_KEY": "sk-ant-SECRET-0003"}
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head, extra_env=keys)
    assert run.returncode == 0, run.stdout + run.stderr
    log = run.stdout.splitlines()
    for key in keys.values():
        assert f"::add-mask::{key}" in log
        assert log.index(f"::add-mask::{key}") < 3  # masked before anything else is printed
        everything_else = [line for line in log if line != f"::add-mask::{key}"]
        assert key not in "\n".join(everything_else) + run.stderr + run.summary
        assert key not in json.dumps(run.report)
        assert all(key not in c.body for c in github_fake.comments)


def test_check_passes_when_policy_allows(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "success"


def test_the_browsable_report_is_written_beside_the_json_and_linked(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    html = (repo.path / "turncheck-report.html").read_text(encoding="utf-8")
    assert 'class="two-sided"' in html and 'data-verdict="later-turn"' in html
    link = "browsable report: artifact `turncheck-html-report` of [the run]("
    [comment] = github_fake.comments_on(PR)
    assert link in comment.body and link in run.summary
    assert "HTML report written to turncheck-report.html" in run.stdout


def test_fork_pull_request_leaves_a_report_and_exits_by_policy(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    github_fake.writes_forbidden = True
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"}, fork=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "expected on pull requests from forks" in run.stdout
    assert run.report is not None and run.report["pull_number"] == PR
    assert run.outputs["report-path"] == "turncheck-report.json"
    assert github_fake.comments == [] and not github_fake.check_runs

    failing = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                               {"fail-on": "likely-regression"}, fork=True)
    assert failing.returncode == 1


def test_workflow_run_posts_the_fork_report_from_its_artifact(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    github_fake.writes_forbidden = True
    run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                     {"fail-on": "failure"}, fork=True)
    github_fake.writes_forbidden = False
    github_fake.artifacts[99] = [("turncheck-report",
                                  zipped(repo.path / "turncheck-report.json"))]
    github_fake.pull_head_repos[PR] = "someone/widgets"
    event = {
        "workflow_run": {"id": 99, "head_sha": head, "head_branch": "feature", "event":
                         "pull_request", "conclusion": "success", "pull_requests": [],
                         "head_repository": {"full_name": "someone/widgets",
                                             "owner": {"login": "someone"}}},
        "repository": {"full_name": "octo-org/widgets", "default_branch": "main"},
    }
    trusted = GitRepo(tmp_path / "trusted")  # the poster checks nothing out
    trusted.commit("empty")
    run = run_action(trusted, tmp_path / "runner2", github_fake.base_url, "workflow_run", event,
                     {"fail-on": "likely-regression"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert len(github_fake.comments_on(PR)) == 1, run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in comment.body
    assert "browsable report" not in comment.body  # no page of a fork's run is vouched for
    # The fork's figures, under their own check name; the required check waits.
    [check] = github_fake.check_runs_named("turncheck (unverified fork report)")
    assert check.head_sha == head and check.conclusion == "failure"
    [required] = github_fake.check_runs_named("turncheck")
    assert required.conclusion == "action_required"


def test_workflow_run_refuses_a_report_for_another_commit(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    github_fake.writes_forbidden = True
    run_pull_request(repo, tmp_path / "runner", github_fake, base, head, fork=True)
    github_fake.writes_forbidden = False
    github_fake.artifacts[5] = [("turncheck-report",
                                 zipped(repo.path / "turncheck-report.json"))]
    github_fake.pull_head_shas[PR] = "f" * 40  # the PR moved on: the report is stale or forged
    event = {"workflow_run": {"id": 5, "head_sha": head, "pull_requests": [],
                              "event": "pull_request",
                              "head_repository": {"full_name": "octo-org/widgets"}},
             "repository": {"full_name": "octo-org/widgets"}}
    run = run_action(repo, tmp_path / "runner2", github_fake.base_url, "workflow_run", event)
    assert run.returncode == 1
    assert "is not at" in run.stdout
    assert github_fake.comments == []


def test_deleted_and_renamed_suites_give_correct_deltas(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write("evals/old.eval.yaml", suite_text(model.base_url, BASE_EVALS, name="kept"))
    record(repo.path / "evals/old.eval.yaml")
    repo.write("evals/gone.eval.yaml", suite_text(model.base_url, BASE_EVALS, name="gone"))
    record(repo.path / "evals/gone.eval.yaml")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.rename("evals/old.eval.yaml", "evals/new.eval.yaml")
    repo.rename("evals/old.eval.cassette.yaml", "evals/new.eval.cassette.yaml")
    repo.remove("evals/gone.eval.yaml")
    repo.remove("evals/gone.eval.cassette.yaml")
    head = repo.commit("rename one suite, delete the other")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    assert "removed suite" in comment.body and "renamed suite" in comment.body
    report = run.report
    assert report is not None
    gone_cost = sum(e["cost_usd"] for s in report["base"]["suites"]  # type: ignore[index]
                    if s["path"] == "evals/gone.eval.yaml" for e in s["evals"])
    assert gone_cost > 0
    assert float(run.outputs["cost-delta"]) == pytest.approx(-gone_cost, abs=1e-9)


def test_validation_problems_become_annotations_in_batches(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "x")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    broken = "".join(f"  - prompt: q{i}\n    checks: [{{mtch: x}}]\n" for i in range(120))
    repo.write("evals/broken.eval.yaml", suite_text(model.base_url, broken))
    head = repo.commit("120 problems")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid"})
    assert run.returncode == 1
    [check] = github_fake.check_runs.values()
    assert len(check.annotations) == 120
    requests = github_fake.requests_matching("POST", r"/check-runs$") + \
        github_fake.requests_matching("PATCH", r"/check-runs/\d+$")
    assert len(requests) == 3
    assert {a["path"] for a in check.annotations} == {"evals/broken.eval.yaml"}
    assert check.annotations[0]["start_line"] == 9  # the line of the misspelt key


def test_a_pr_without_eval_changes_posts_no_comment_and_says_so(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, _, head = pr_repo
    repo.write("README.md", "docs only")
    docs = repo.commit("docs only")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, head, docs)
    assert run.returncode == 0, run.stdout + run.stderr
    assert github_fake.comments == []
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "success"
    assert check.output["title"] == "✅ no eval suite or sample file changed"


def test_a_push_that_reverts_every_eval_change_clears_the_old_verdict(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    first = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                             {"fail-on": "likely-regression"})
    assert first.returncode == 1
    [comment] = github_fake.comments_on(PR)
    assert "1 later turn" in comment.body

    # The next push puts the suite and its cassette back as they are on base.
    repo.git("checkout", base, "--", "evals")
    reverted = repo.commit("revert the eval change")
    second = run_pull_request(repo, tmp_path / "runner2", github_fake, base, reverted,
                              {"fail-on": "likely-regression"})
    assert second.returncode == 0, second.stdout + second.stderr
    [comment] = github_fake.comments_on(PR)  # the same comment, edited in place
    assert "regression" not in comment.body
    assert comment.body.split("\n")[1] == "## ✅ no eval suite or sample file changed"
    checks = [c for c in github_fake.check_runs.values() if c.head_sha == reverted]
    assert [c.conclusion for c in checks] == ["success"]
