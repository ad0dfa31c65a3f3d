"""`turncheck action` beyond the plain pull request: push runs, comment modes, bad inputs,
a token without `checks: write`, a shallow checkout, other events, working-directory.

Each test runs the installed console script with the runner's environment
(tests/support/action_harness.py) against the stateful GitHub fake.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.action_harness import PR, ActionRun, run_action, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import (
    BASE_EVALS,
    FAILING_EVALS,
    HEAD_EVALS,
    PASSING_EVALS,
    TURN_EVALS,
    add_suite,
    feature_branch_repo,
)
from tests.support.scripted_server import ScriptedServer


def pr_repo(root: Path, model: ScriptedServer, directory: str = "") -> tuple[GitRepo, str, str]:
    """Base has the turn suite passing on turn 1; the feature branch makes it need turn 2."""
    return feature_branch_repo(root, suite_text(model.base_url, BASE_EVALS),
                               suite_text(model.base_url, HEAD_EVALS),
                               path=f"{directory}evals/math.eval.yaml")


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("::error")]


# ---- (a) push: every suite, a report without base, no comment ------------------------


def push_event(before: str, after: str) -> dict[str, object]:
    return {"ref": "refs/heads/main", "before": before, "after": after,
            "repository": {"full_name": "octo-org/widgets", "default_branch": "main"}}


@pytest.fixture
def main_branch(tmp_path: Path, model: ScriptedServer) -> GitRepo:
    repo = GitRepo(tmp_path / "workspace")
    add_suite(repo, "evals/math.eval.yaml", suite_text(model.base_url, PASSING_EVALS))
    add_suite(repo, "evals/geo/capitals.eval.yaml",
              suite_text(model.base_url, FAILING_EVALS, name="capitals"))
    repo.write("README.md", "not a suite")
    repo.commit("initial")
    add_suite(repo, "evals/more.eval.yaml", suite_text(model.base_url, TURN_EVALS, name="more"))
    repo.commit("only this suite changed in the push")
    return repo


def test_push_runs_every_suite_and_writes_a_baseline_report(
    tmp_path: Path, main_branch: GitRepo, github_fake: FakeGitHub
) -> None:
    before = main_branch.sha("HEAD~1")
    run = run_action(main_branch, tmp_path / "runner", github_fake.base_url, "push",
                     push_event(before, main_branch.head), {"fail-on": "failure"})

    assert run.returncode == 1, run.stdout + run.stderr  # the capital eval fails
    assert "Traceback" not in run.stdout + run.stderr
    report = run.report
    assert report is not None
    assert report["base"] is None and report["pull_number"] is None
    assert report["head_sha"] == main_branch.head
    paths = sorted(s["path"] for s in report["head"]["suites"])  # type: ignore[index]
    # Every suite in the workspace, not just the one the push changed.
    assert paths == ["evals/geo/capitals.eval.yaml", "evals/math.eval.yaml",
                     "evals/more.eval.yaml"]
    assert run.outputs["passed"] == "2" and run.outputs["failed"] == "1"
    assert run.outputs["errors"] == "0"
    assert run.outputs["cost-delta"] == ""  # nothing to compare against
    assert float(run.outputs["cost"]) > 0
    assert run.outputs["report-path"] == "turncheck-report.json"
    assert run.outputs["comment-url"] == ""
    assert "capitals" in run.summary and "<!-- turncheck:comment -->" in run.summary
    assert "Lyon." in run.summary  # the step summary carries the transcripts
    assert github_fake.comments == [] and not github_fake.check_runs
    assert not [r for r in github_fake.requests if r.method != "GET"]
    # The failing eval is annotated at its line in the log.
    assert any(line.startswith("::error file=evals/geo/capitals.eval.yaml,line=9,")
               for line in run.stdout.splitlines()), run.stdout


def test_push_exit_code_follows_fail_on(
    tmp_path: Path, main_branch: GitRepo, github_fake: FakeGitHub
) -> None:
    event = push_event(main_branch.sha("HEAD~1"), main_branch.head)
    lenient = run_action(main_branch, tmp_path / "r1", github_fake.base_url, "push", event,
                         {"fail-on": "invalid"})
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert lenient.outputs["failed"] == "1"
    assert not error_lines(lenient.stdout.replace("::error file=", ""))

    custom = run_action(main_branch, tmp_path / "r2", github_fake.base_url, "push", event,
                        {"fail-on": "failure", "report-path": "out/baseline.json"})
    assert custom.returncode == 1
    assert custom.report is not None  # written where report-path says
    assert custom.outputs["report-path"] == "out/baseline.json"
    assert any("1 failed eval" in line for line in error_lines(custom.stdout))


# ---- (b) comment modes ------------------------------------------------------------------


def priced_on(run: ActionRun) -> str:
    assert run.report is not None
    return str(run.report["head"]["price_source"]["timestamp"])[:10]  # type: ignore[index]


def test_on_change_skips_the_edit_when_the_report_is_the_same(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    first = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                             {"comment": "on-change"})
    assert "PR comment created" in first.stdout, first.stdout + first.stderr
    [comment] = github_fake.comments_on(PR)
    posted = comment.body

    second = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                              {"comment": "on-change"})
    assert second.returncode == first.returncode
    if priced_on(first) != priced_on(second):
        pytest.skip("the two runs were priced on different days (midnight UTC in between)")
    assert not github_fake.requests_matching("PATCH", r"/issues/comments/\d+"), second.stdout
    assert len(github_fake.comments_on(PR)) == 1
    assert github_fake.comments_on(PR)[0].body == posted
    assert "PR comment unchanged" in second.stdout
    assert second.outputs["comment-url"] == first.outputs["comment-url"]

    always = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                              {"comment": "always"})
    assert "PR comment updated" in always.stdout
    assert len(github_fake.requests_matching("PATCH", r"/issues/comments/\d+")) == 1


def test_comment_never_still_creates_the_check_run(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                 {"comment": "never", "fail-on": "likely-regression"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert github_fake.comments == []
    assert not github_fake.requests_matching("POST", r"/issues/\d+/comments")
    [check] = github_fake.check_runs.values()
    assert (check.head_sha, check.conclusion) == (head, "failure")
    assert "multiply now passes on turn 2 \\(was 1\\)" in check.output["summary"]
    assert check.output["title"] == (
        "❌ 1 later turn · multiply now passes on turn 2 (was 1) · evals passing 2 → 2 of 2")
    assert run.outputs["comment-url"] == ""


# ---- (c) invalid inputs -------------------------------------------------------------------


def test_invalid_inputs_are_reported_together_in_one_error(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head, {
        "mode": "fast",
        "concurrency": "zero",
        "fail-on": "everything",
        "max-depth": "9",
        "working-directory": "../x",
    })

    assert run.returncode == 1
    log = run.stdout + run.stderr
    assert "Traceback" not in log
    [line] = error_lines(log)
    for problem in ("input mode", "'fast'", "input concurrency", "'zero'", "input fail-on",
                    "'everything'", "input max-depth", "'9'", "input working-directory",
                    "'../x'"):
        assert problem in line, line
    assert github_fake.requests == []  # nothing was posted with half-read settings
    assert run.report is None


# ---- (d) no checks: write ------------------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "state"), [("likely-regression", "failure"),
                                                ("failure", "success")])
def test_commit_status_replaces_the_check_run_without_checks_permission(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub, fail_on: str, state: str
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    github_fake.checks_forbidden = True
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head, {"fail-on": fail_on})

    assert run.returncode == (1 if state == "failure" else 0), run.stdout + run.stderr
    assert github_fake.requests_matching("POST", r"/check-runs$")  # it was tried first
    assert not github_fake.check_runs
    [status] = github_fake.statuses
    assert (status["sha"], status["state"], status["context"]) == (head, state, "turncheck")
    assert "1 later turn · multiply now passes on turn 2 (was 1)" in status["description"]
    assert status["target_url"] == "https://github.com/octo-org/widgets/actions/runs/4242"
    assert "setting a commit status instead" in run.stdout
    assert len(github_fake.comments_on(PR)) == 1


# ---- (e) shallow checkout without the base commit --------------------------------------------


def test_shallow_clone_learns_the_changed_files_from_the_api(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    origin, base, head = pr_repo(tmp_path / "origin", model)
    add_suite(origin, "evals/untouched.eval.yaml",
              suite_text(model.base_url, PASSING_EVALS, name="untouched"))
    origin.git("add", "--all")
    origin.git("commit", "--quiet", "--amend", "--no-edit", "--no-verify")
    head = origin.head
    # actions/checkout's default: one commit deep; and the remote cannot be reached.
    workspace = origin.clone(tmp_path / "workspace", branch="feature", depth=1)
    assert (workspace.path / "evals/untouched.eval.yaml").is_file()
    workspace.git("remote", "set-url", "origin", str(tmp_path / "gone"))
    github_fake.add_pr_file(PR, "evals/math.eval.yaml")
    github_fake.add_pr_file(PR, "docs/notes.md")

    run = run_pull_request(workspace, tmp_path / "runner", github_fake, base, head,
                 {"fail-on": "failure"})

    assert run.returncode == 0, run.stdout + run.stderr
    assert "fetch-depth: 0" in run.stdout
    assert github_fake.requests_matching("GET", rf"/pulls/{PR}/files$")
    assert run.report is not None
    head_suites = [s["path"] for s in run.report["head"]["suites"]]  # type: ignore[index]
    # Only what the API says changed runs; the untouched suite (also new here) does not.
    assert head_suites == ["evals/math.eval.yaml"]
    [comment] = github_fake.comments_on(PR)
    assert "math" in comment.body and "untouched" not in comment.body
    assert "Traceback" not in run.stdout + run.stderr


# ---- (f) unsupported events ---------------------------------------------------------------------


def test_unsupported_event_fails_with_a_clear_error(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, _, _ = pr_repo(tmp_path / "workspace", model)
    event: dict[str, object] = {"action": "opened", "issue": {"number": 3},
                                "repository": {"full_name": "octo-org/widgets"}}
    run = run_action(repo, tmp_path / "runner", github_fake.base_url, "issues", event)

    assert run.returncode == 1
    assert "Traceback" not in run.stdout + run.stderr
    [line] = error_lines(run.stdout + run.stderr)
    assert "unsupported event 'issues'" in line
    assert "pull_request" in line  # says what is supported
    assert github_fake.requests == [] and run.report is None


# ---- (g) working-directory ------------------------------------------------------------------


def test_annotations_under_a_working_directory_are_repo_relative(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, _ = pr_repo(tmp_path / "workspace", model, directory="sub/")
    add_suite(repo, "sub/evals/geo.eval.yaml", suite_text(model.base_url, FAILING_EVALS, "geo"))
    repo.write("sub/evals/broken.eval.yaml", suite_text(model.base_url,
                                                        "  - prompt: q\n    checks: [{mtch: x}]\n"))
    repo.write("evals/outside.eval.yaml", "not even YAML: [")  # outside working-directory
    head = repo.commit("more suites")

    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                 {"working-directory": "sub", "fail-on": "failure,likely-regression,invalid"})

    assert run.returncode == 1, run.stdout + run.stderr
    [check] = github_fake.check_runs.values()
    found = {(a["path"], a["start_line"], a["annotation_level"]) for a in check.annotations}
    assert ("sub/evals/geo.eval.yaml", 9, "failure") in found
    assert ("sub/evals/broken.eval.yaml", 9, "failure") in found
    assert all(path.startswith("sub/evals/") for path, _, _ in found), found
    # The turn regression is annotated too, at its eval's line, naming the failed check.
    assert ("sub/evals/math.eval.yaml", 9, "failure") in found
    [shift] = [a for a in check.annotations if a["path"] == "sub/evals/math.eval.yaml"]
    assert shift["message"] == ("eval 'multiply' now passes on turn 2 (was 1); "
                                'turn 1: check match "*105*" failed')
    printed = {m.group(1) for m in re.finditer(r"^::error file=([^,]+),", run.stdout, re.M)}
    assert printed == {"sub/evals/geo.eval.yaml", "sub/evals/broken.eval.yaml",
                       "sub/evals/math.eval.yaml"}
    # The changed suite was compared against its base version, also read from sub/.
    [comment] = github_fake.comments_on(PR)
    # The heading names every cause of the failed check, most severe first.
    assert comment.body.split("\n")[1].startswith(
        "## ❌ 1 file could not run, 1 later turn, 1 failing · evals/broken.eval.yaml · ")
    assert "now passes on turn 2 \\(was 1\\)" in comment.body
    assert "outside" not in comment.body  # suites outside working-directory are ignored
