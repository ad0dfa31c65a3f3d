"""`merge_group` (merge queues) and `pull_request_target` in the action.

A merge queue builds a commit of the queued pull requests on top of the target
branch and fires `merge_group`; a required check must report on that commit or
nothing merges. `pull_request_target` checks out the base branch, so it is refused
rather than evaluating base files as the pull request's head.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.action_harness import REPOSITORY, pull_request_event, run_action, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.support.scripted_server import ScriptedServer

QUEUE_BRANCH = "gh-readonly-queue/main/pr-7-0123456789abcdef0123456789abcdef01234567"


def queue_group(repo: GitRepo) -> tuple[str, str]:
    """Merge `feature` onto `main` on a queue branch, as GitHub does; (base, group head)."""
    base = repo.sha("main")
    repo.checkout("main")
    repo.branch(QUEUE_BRANCH, checkout=True)
    repo.git("merge", "--quiet", "--no-ff", "--no-edit", "feature")
    return base, repo.head


def merge_group_event(base: str | None, head: str) -> dict[str, object]:
    """The `checks_requested` payload (octokit/webhooks shape; `base_sha` in newer ones)."""
    group: dict[str, object] = {"head_sha": head, "head_ref": f"refs/heads/{QUEUE_BRANCH}",
                                "base_ref": "refs/heads/main"}
    if base is not None:
        group["base_sha"] = base
    return {"action": "checks_requested", "merge_group": group,
            "repository": {"full_name": REPOSITORY, "default_branch": "main"},
            "sender": {"login": "octocat"}}


@pytest.fixture
def queued(tmp_path: Path, model: ScriptedServer) -> tuple[GitRepo, str, str]:
    repo, _, _ = feature_branch_repo(tmp_path / "workspace",
                                     suite_text(model.base_url, BASE_EVALS),
                                     suite_text(model.base_url, HEAD_EVALS))
    base, head = queue_group(repo)
    return repo, base, head


def test_merge_group_posts_the_check_on_the_group_head_and_no_comment(
    tmp_path: Path, queued: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = queued
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "merge_group",
                     merge_group_event(base, head), {"fail-on": "likely-regression"})

    assert "Traceback" not in run.stdout + run.stderr
    assert run.returncode == 1, run.stdout + run.stderr  # the turn regression fails the group
    [check] = github_fake.check_runs.values()
    assert (check.name, check.head_sha, check.conclusion) == ("turncheck", head, "failure")
    assert "multiply now passes on turn 2" in check.output["summary"]
    assert github_fake.comments == []
    assert not github_fake.requests_matching("POST", r"/issues/\d+/comments")
    assert run.report is not None
    assert (run.report["event"], run.report["base_sha"], run.report["head_sha"]) == (
        "merge_group", base, head)
    assert run.report["pull_number"] is None
    assert run.report["head"]["mode"] == "replay"  # type: ignore[index]


def test_merge_group_passes_by_policy_and_reads_an_old_payload_without_base_sha(
    tmp_path: Path, queued: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = queued
    # Older payloads name only base_ref; the checkout knows origin/main.
    repo.git("remote", "add", "origin", repo.path.resolve().as_uri())
    repo.git("fetch", "--quiet", "origin", "main")
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "merge_group",
                     merge_group_event(None, head), {"fail-on": "failure"})

    assert run.returncode == 0, run.stdout + run.stderr
    [check] = github_fake.check_runs.values()
    assert (check.head_sha, check.conclusion) == (head, "success")
    assert run.report is not None and run.report["base_sha"] == base
    assert github_fake.comments == []


def test_merge_group_without_eval_changes_still_reports_the_check(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    text = suite_text(model.base_url, BASE_EVALS)
    repo, _, _ = feature_branch_repo(tmp_path / "workspace", text, text)
    repo.write("docs/notes.md", "not an eval")
    repo.commit("docs only")
    base, head = queue_group(repo)
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "merge_group",
                     merge_group_event(base, head))

    assert run.returncode == 0, run.stdout + run.stderr
    [check] = github_fake.check_runs.values()
    assert check.head_sha == head and check.conclusion == "success"
    assert "no eval suite or sample file changed" in check.output["title"]
    assert github_fake.comments == []


def test_pull_request_target_is_refused_without_evaluating_base_files(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = feature_branch_repo(tmp_path / "workspace",
                                           suite_text(model.base_url, BASE_EVALS),
                                           suite_text(model.base_url, HEAD_EVALS))
    repo.checkout("main")  # what pull_request_target checks out: the base branch
    assert repo.head == base
    before = len(model.requests)
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "pull_request_target",
                     pull_request_event(7, base, head))

    assert run.returncode == 1
    assert "Traceback" not in run.stdout + run.stderr
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "pull_request_target is not supported" in errors[0]
    assert re.search(r"Use `on: pull_request`", errors[0])
    assert run.report is None  # nothing was run: no head results from base files
    assert github_fake.requests == [] and github_fake.check_runs == {}
    assert len(model.requests) == before


def test_a_pull_request_run_in_a_base_checkout_is_refused(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    """Whatever the event, head results never come from a workspace at the base commit."""
    repo, base, head = feature_branch_repo(tmp_path / "workspace",
                                           suite_text(model.base_url, BASE_EVALS),
                                           suite_text(model.base_url, HEAD_EVALS))
    repo.checkout("main")
    github_fake.pull_head_shas[7] = head
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "pull_request",
                     pull_request_event(7, base, head))

    assert run.returncode == 1
    assert "the workspace is at the base commit" in run.stdout
    assert run.report is None and github_fake.check_runs == {} and github_fake.comments == []


def test_a_merge_group_run_in_a_base_checkout_is_refused(
    tmp_path: Path, queued: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = queued
    repo.checkout("main")
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "merge_group",
                     merge_group_event(base, head))

    assert run.returncode == 1
    assert "the workspace is at the base commit" in run.stdout
    assert run.report is None and github_fake.check_runs == {}
