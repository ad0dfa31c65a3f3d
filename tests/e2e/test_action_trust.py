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

from tests.support.action_harness import (
    PR,
    REPOSITORY,
    ActionRun,
    pull_request_event,
    run_action,
    run_pull_request,
    suite_text,
    zipped,
)
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.support.scripted_server import ScriptedServer
from turncheck.github.context import read_context
from turncheck.github.inputs import read_inputs
from turncheck.github.job import Job

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


def test_a_fork_report_is_not_posted_to_another_pr_of_the_same_fork_at_the_same_commit(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    # Issue 23, defect 15: the fork opens PR 8 from another branch at the same commit;
    # the report of PR 7's run, edited to name #8, must not land on #8.
    repo, base, head = pr_repo
    report = all_pass(fork_run_report(repo, tmp_path, github_fake, base, head))
    github_fake.pull_head_shas[8], github_fake.pull_head_repos[8] = head, FORK
    github_fake.pull_head_refs[8] = "other-branch"
    report["pull_number"] = 8

    run = post(tmp_path, github_fake, report, head)
    assert run.returncode == 1
    assert "whose head is branch 'other-branch', but run 99 built branch 'feature'" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert github_fake.comments == [] and not github_fake.check_runs


def test_two_prs_of_one_fork_branch_get_neither_report(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    # The same fork branch opened against two base branches: a fork run's payload names no
    # pull request, so which PR a report belongs to is only the fork's word.
    repo, base, head = pr_repo
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    github_fake.pull_head_shas[8], github_fake.pull_head_repos[8] = head, FORK

    for number, run_id in ((PR, 99), (8, 100)):
        run = post(tmp_path, github_fake, {**report, "pull_number": number}, head,
                   run_id=run_id)
        assert run.returncode == 1, run.stdout + run.stderr
        assert f"pull requests #{number}, #{15 - number} all come from {FORK}" in run.stdout
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
    assert job.options().env == {"OPENAI_API_KEY": "sk-1"}
    same_repo = Job(read_context({**env, "GITHUB_EVENT_NAME": "pull_request"}),
                    read_inputs(env), env)
    assert same_repo.options().env == env  # unchanged elsewhere


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


# ---- issue 23, defect 2: every string of a fork's report is data --------------------------


PHISHING = ("x) [Sign in again](https://evil.example/login) ![](https://evil.example/p.png) "
            "@maintainer #1 [y](https://evil.example")


def with_diagnostic(report: dict[str, Any], *files: str) -> dict[str, Any]:
    """The report with a validation problem at `file:3` of each of `files` (the comment
    links file:line); a second and later one says which (the comment merges identical
    problems into one row)."""
    edited = json.loads(json.dumps(report))
    edited["head"]["diagnostics"] = [
        {"file": file, "line": 3, "column": 1, "severity": "error", "code": "yaml-syntax",
         "message": "bad indentation" + (f" ({number})" if number else "")}
        for number, file in enumerate(files)]
    return edited


def everything_posted(github: FakeGitHub) -> str:
    return "\n".join([*(c.body for c in github.comments),
                      *(json.dumps(r.output) for r in github.check_runs.values()),
                      *(json.dumps(r.annotations) for r in github.check_runs.values())])


def test_a_hostile_working_directory_never_reaches_the_comment(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    github_fake.trees[head] = repo.git("ls-tree", "-r", "--name-only", head).split("\n")
    report = with_diagnostic(fork_run_report(repo, tmp_path, github_fake, base, head),
                             "evals/math.eval.yaml")
    for workdir in (PHISHING, "../../../../someone/phish", "nowhere"):
        run = post(tmp_path, github_fake, {**report, "working_directory": workdir}, head)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "is not a directory of the pull request's commit" in run.stdout
        assert "Traceback" not in run.stdout + run.stderr
    assert github_fake.comments == [] and not github_fake.check_runs


def test_links_in_a_fork_report_go_only_to_the_commits_own_files(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    github_fake.trees[head] = repo.git("ls-tree", "-r", "--name-only", head).split("\n")
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    blob = f"https://github.com/{REPOSITORY}/blob/{head}/"

    # One poster run (a turncheck process each: issue 21) for the real file and the three
    # hostile ones: each diagnostic decides its own link.
    hostile = ["../../../../someone/phish", PHISHING, "evals/missing.eval.yaml"]
    run = post(tmp_path, github_fake, with_diagnostic(report, "evals/math.eval.yaml", *hostile),
               head, run_id=101)
    assert run.returncode == 1, run.stdout + run.stderr
    [comment] = github_fake.comments
    assert f"]({blob}evals/math.eval.yaml#L3)" in comment.body
    assert comment.body.count(f"]({blob}") == 1  # the hostile three are not links
    assert comment.body.count("bad indentation") == 4  # but their problems are shown, as text
    posted = everything_posted(github_fake)
    assert "](https://evil" not in posted and "![" not in posted
    assert "@maintainer" not in posted  # no mention: a zero-width space follows the @


def test_the_footer_never_prints_the_baseline_a_fork_report_claims(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    report["baseline"] = {
        "source": "artifact", "artifact": "turncheck-report-approved-by-maintainers",
        "run_id": 1, "commit": base, "event": "push", "saved_tokens": 10**9,
        "rejected": ["the real baseline from run 5: forged"]}
    report["base"]["commit"] = "approved by the security team"

    run = post(tmp_path, github_fake, report, head)
    assert "Traceback" not in run.stdout + run.stderr, run.stdout
    posted = everything_posted(github_fake)
    assert "approved" not in posted and "forged" not in posted and "1,000,000,000" not in posted
    [comment] = github_fake.comments
    assert "its provenance is not shown" in comment.body


# ---- issue 23, defect 16: an oversize fork report gets a clear verdict, not silence --------


@pytest.mark.parametrize("oversize", ["report", "artifact"])
def test_a_fork_report_too_large_to_read_gets_a_clear_comment_and_check(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub, oversize: str
) -> None:
    repo, base, head = pr_repo
    report = fork_run_report(repo, tmp_path, github_fake, base, head)
    if oversize == "report":  # valid JSON padded past 20 MiB: a small zip, a huge file
        path = tmp_path / "big" / "turncheck-report.json"
        path.parent.mkdir()
        path.write_text(json.dumps(report) + " " * (21 * 1024 * 1024))
        artifact = zipped(path)
    else:  # the artifact itself is over the 25 MiB download cap
        artifact = b"PK" + b"\0" * (25 * 1024 * 1024)
    github_fake.artifacts[99] = [("turncheck-report", artifact)]
    event = {"workflow_run": {"id": 99, "head_sha": head, "head_branch": "feature",
                              "event": "pull_request", "conclusion": "success",
                              "pull_requests": [], "head_repository": {"full_name": FORK}},
             "repository": {"full_name": REPOSITORY, "default_branch": "main"}}
    poster = GitRepo(tmp_path / "poster")
    poster.commit("empty")
    run = run_action(poster, tmp_path / "poster-runner", github_fake.base_url, "workflow_run",
                     event, FAILING)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    assert comment.body.startswith("<!-- turncheck:comment -->")
    assert "the fork's report is too large to show" in comment.body
    assert f"run 99 of {FORK}" in comment.body and f"`{LABEL}`" in comment.body
    [unverified] = github_fake.check_runs_named(UNVERIFIED)
    assert unverified.conclusion == "failure" and "too large" in unverified.output["title"]
    assert [c.conclusion for c in github_fake.check_runs_named(REQUIRED)] == ["action_required"]
