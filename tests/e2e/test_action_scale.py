"""Issue 7 in the action: sharded PR runs merged by one report job; baselines from artifacts."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.action_harness import (
    PR,
    ActionRun,
    run_action,
    run_pull_request,
    suite_text,
    zipped,
)
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, SUITE, feature_branch_repo
from tests.support.scripted_server import ScriptedServer

MANY_BASE = "".join(
    f"  - name: e{i}\n    prompt: 'What is {i} + {i}?'\n    checks: [{{match: '*{2 * i}*'}}]\n"
    for i in range(12)
)
MANY_HEAD = MANY_BASE.replace("What is", "Compute")


@pytest.fixture
def model(model: ScriptedServer) -> ScriptedServer:
    """Also doubles the last number of any other prompt (the MANY evals)."""
    model.add_rule(lambda body: str(2 * int(body["messages"][-1]["content"].split()[-1]
                                            .rstrip("?"))), usage=(9, 2))
    return model


def requests_for(server: ScriptedServer, text: str) -> int:
    return sum(text in json.dumps(r.json) for r in server.requests)


def test_artifact_baseline_is_used_without_calling_the_provider(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write(SUITE, suite_text(model.base_url, BASE_EVALS))
    base = repo.commit("base")
    main_run = run_action(repo, tmp_path / "main", github_fake.base_url, "push", {
        "repository": {"full_name": "octo-org/widgets", "default_branch": "main"}},
        {"mode": "live"})
    assert main_run.returncode == 0, main_run.stdout
    github_fake.artifacts[500] = [(f"turncheck-report-{base}",
                                   zipped(repo.path / "turncheck-report.json"))]
    github_fake.artifact_runs[500] = {"head_sha": base, "head_branch": "main"}
    repo.branch("feature", checkout=True)
    repo.write(SUITE, suite_text(model.base_url, HEAD_EVALS))
    head = repo.commit("prompt change")
    base_calls_before = requests_for(model, "What is 15 * 7?")

    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert requests_for(model, "What is 15 * 7?") == base_calls_before  # no baseline call
    assert f"baseline: artifact turncheck-report-{base} from run 500" in run.stdout
    report = run.report
    assert report is not None and report["baseline"]["source"] == "artifact"
    assert report["saved_tokens"] > 0 and report["live_tokens"] > 0
    [comment] = github_fake.comments_on(PR)
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in comment.body
    assert "tokens saved" in comment.body and "live tokens spent" in comment.body


def test_without_an_artifact_the_base_is_re_run(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = feature_branch_repo(
        tmp_path / "workspace", suite_text(model.base_url, BASE_EVALS),
        suite_text(model.base_url, HEAD_EVALS), recorder=None)
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "baseline": "artifact", "fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "re-running the base commit instead" in run.stdout
    assert requests_for(model, "What is 15 * 7?") >= 1
    assert run.report is not None and run.report["baseline"]["source"] == "rerun"


def sharded_repo(tmp_path: Path, model: ScriptedServer) -> tuple[GitRepo, str, str]:
    return feature_branch_repo(tmp_path / "workspace", suite_text(model.base_url, MANY_BASE),
                               suite_text(model.base_url, MANY_HEAD))


def run_shards(repo: GitRepo, tmp_path: Path, github: FakeGitHub, base: str, head: str,
               shards: list[int]) -> None:
    """The shard jobs at once, each in its own checkout as on its own runner (a third of
    the time one after another took: issue 21); their reports are put in `repo`'s
    `reports/`, as the report job downloads them."""
    def shard_job(index: int) -> tuple[GitRepo, ActionRun]:
        checkout = repo.clone(tmp_path / f"shard{index}-checkout", branch="feature")
        return checkout, run_pull_request(checkout, tmp_path / f"shard{index}", github, base,
                                          head, {"shard": f"{index}/3",
                                                 "report-path": f"reports/shard-{index}.json"})

    with ThreadPoolExecutor(max_workers=len(shards)) as pool:
        jobs = list(pool.map(shard_job, shards))
    (repo.path / "reports").mkdir(exist_ok=True)
    for index, (checkout, run) in zip(shards, jobs, strict=True):
        assert run.returncode == 0, run.stdout + run.stderr
        name = f"reports/shard-{index}.json"
        shutil.copyfile(checkout.path / name, repo.path / name)


def test_three_shards_merge_into_one_comment(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = sharded_repo(tmp_path, model)
    run_shards(repo, tmp_path, github_fake, base, head, [1, 2, 3])
    assert not github_fake.comments and not github_fake.check_runs  # shards post nothing
    report = run_pull_request(repo, tmp_path / "report", github_fake, base, head,
                              {"merge-reports": "reports/shard-*.json", "fail-on": "failure"})
    assert report.returncode == 0, report.stdout + report.stderr
    assert report.outputs["passed"] == "12"
    [comment] = github_fake.comments_on(PR)
    assert "12 of 12" in comment.body
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "success"


def test_a_missing_shard_fails_the_report_job_by_name(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base, head = sharded_repo(tmp_path, model)
    run_shards(repo, tmp_path, github_fake, base, head, [1, 3])
    report = run_pull_request(repo, tmp_path / "report", github_fake, base, head,
                              {"merge-reports": "reports/shard-*.json"})
    assert report.returncode == 1
    assert "missing shard report(s): 2/3" in report.stdout
    assert "Traceback" not in report.stdout + report.stderr
    assert not github_fake.comments


# ---- only trusted runs supply baselines ------------------------------------------------------

FORK_RUN = {"event": "pull_request", "head_repository": "someone/widgets", "head_branch": "main"}
UNTRUSTED_RUNS = {
    "fork pull request from its main branch": FORK_RUN,
    "same-repository pull request": {"event": "pull_request", "head_branch": "main"},
    "push to another branch": {"event": "push", "head_branch": "feature"},
}


def main_branch_report(repo: GitRepo, tmp_path: Path, github: FakeGitHub) -> bytes:
    """The zipped report a push run of main leaves for the current commit."""
    main_run = run_action(repo, tmp_path / "main", github.base_url, "push", {
        "repository": {"full_name": "octo-org/widgets", "default_branch": "main"}},
        {"mode": "live"})
    assert main_run.returncode == 0, main_run.stdout
    return zipped(repo.path / "turncheck-report.json")


def forged_report(genuine: Path, tmp_path: Path) -> bytes:
    """The genuine report edited the way an attacker would: every base eval on turn 2."""
    data = json.loads(genuine.read_text())
    for suite in data["head"]["suites"]:
        for item in suite["evals"]:
            item["passed_on_turn"] = 2
    forged = tmp_path / "forged" / "turncheck-report.json"
    forged.parent.mkdir()
    forged.write_text(json.dumps(data))
    return zipped(forged)


def repository_with_a_main_baseline(tmp_path: Path, model: ScriptedServer,
                                    github_fake: FakeGitHub) -> tuple[GitRepo, str]:
    """A repository at its base commit, whose report main's push run uploaded (run 500)."""
    repo = GitRepo(tmp_path / "workspace")
    repo.write(SUITE, suite_text(model.base_url, BASE_EVALS))
    base = repo.commit("base")
    github_fake.artifacts[500] = [(f"turncheck-report-{base}",
                                   main_branch_report(repo, tmp_path, github_fake))]
    github_fake.artifact_runs[500] = {"head_sha": base, "head_branch": "main",
                                      "created_at": "2026-01-01T00:00:00Z"}
    return repo, base


def pull_request_against_an_artifact_baseline(repo: GitRepo, tmp_path: Path,
                                              model: ScriptedServer, github_fake: FakeGitHub,
                                              base: str) -> ActionRun:
    repo.branch("feature", checkout=True)
    repo.write(SUITE, suite_text(model.base_url, HEAD_EVALS))
    head = repo.commit("prompt change")
    return run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                            {"mode": "live", "baseline": "artifact", "fail-on": "failure"})


def test_a_newer_fork_artifact_named_for_base_loses_to_the_main_branch_one(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    repo, base = repository_with_a_main_baseline(tmp_path, model, github_fake)
    # A fork's PR run uploaded a report under the same name, later (listed first).
    github_fake.artifacts[900] = [(f"turncheck-report-{base}",
                                   forged_report(repo.path / "turncheck-report.json", tmp_path))]
    github_fake.artifact_runs[900] = {**FORK_RUN, "head_sha": base,
                                      "created_at": "2026-01-02T00:00:00Z"}
    run = pull_request_against_an_artifact_baseline(repo, tmp_path, model, github_fake, base)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"baseline: artifact turncheck-report-{base} from run 500" in run.stdout
    assert run.report is not None and run.report["baseline"]["run_id"] == 500
    [comment] = github_fake.comments_on(PR)
    # Against the genuine baseline the turn regression shows; the forged one would hide it.
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in comment.body
    assert "from run 500" in comment.body and "a push run" in comment.body
    # The fork's run is not a default-branch push run: its artifacts are never read.
    assert not github_fake.requests_matching("GET", "/actions/runs/900/artifacts")


@pytest.mark.parametrize("origin", UNTRUSTED_RUNS.values(), ids=UNTRUSTED_RUNS.keys())
def test_with_only_an_untrusted_artifact_the_base_is_re_run(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub, origin: dict[str, str]
) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write(SUITE, suite_text(model.base_url, BASE_EVALS))
    base = repo.commit("base")
    genuine = main_branch_report(repo, tmp_path, github_fake)
    github_fake.artifacts[900] = [(f"turncheck-report-{base}", genuine)]
    github_fake.artifact_runs[900] = {**origin, "head_sha": base}
    base_calls_before = requests_for(model, "What is 15 * 7?")
    run = pull_request_against_an_artifact_baseline(repo, tmp_path, model, github_fake, base)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "re-running the base commit instead" in run.stdout
    assert requests_for(model, "What is 15 * 7?") > base_calls_before  # base ran again
    assert run.report is not None and run.report["baseline"]["source"] == "rerun"
    assert run.report["baseline"]["reason"].startswith("no trusted turncheck-report-* artifact")
    assert not github_fake.requests_matching("GET", "/actions/runs/900/artifacts")
    [comment] = github_fake.comments_on(PR)
    assert "run 900" not in comment.body


def test_many_pull_request_artifacts_cannot_push_the_baseline_out(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    # Issue 23, defect 14: 25 same-repository PR runs (write access) upload reports named
    # for the base commit, all newer than main's; the lookup used to check the newest 20
    # candidate runs and never reached main's.
    repo, base = repository_with_a_main_baseline(tmp_path, model, github_fake)
    forged = forged_report(repo.path / "turncheck-report.json", tmp_path)
    for index in range(25):
        github_fake.artifacts[600 + index] = [(f"turncheck-report-{base}", forged)]
        github_fake.artifact_runs[600 + index] = {
            "event": "pull_request", "head_sha": base,
            "head_branch": "main" if index % 2 else f"pr-{index}",
            "created_at": f"2026-01-02T00:00:{index:02d}Z"}
    run = pull_request_against_an_artifact_baseline(repo, tmp_path, model, github_fake, base)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"baseline: artifact turncheck-report-{base} from run 500" in run.stdout
    assert not github_fake.requests_matching("GET", r"/actions/runs/6\d\d")
    [comment] = github_fake.comments_on(PR)
    assert "1 later turn · multiply now passes on turn 2 \\(was 1\\)" in comment.body


def test_several_trusted_main_runs_are_pooled_and_untrusted_ones_never_are(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub
) -> None:
    # Issue 22 item 6: main's push run (500) and a scheduled run (501) of the base commit
    # both left reports of a repeated suite; a fork's run (900) left a forged one.
    repeated = suite_text(model.base_url, BASE_EVALS).replace("  temperature: 0\n",
                                                              "  temperature: 0\n  repeat: 2\n")
    repo = GitRepo(tmp_path / "workspace")
    repo.write(SUITE, repeated)
    base = repo.commit("base")
    for run_id, event, when, where in ((500, "push", "00", "main"),
                                       (501, "schedule", "06", "again")):
        github_fake.artifacts[run_id] = [(f"turncheck-report-{base}", main_branch_report(
            repo, tmp_path / where, github_fake))]
        github_fake.artifact_runs[run_id] = {"head_sha": base, "head_branch": "main",
                                             "event": event,
                                             "created_at": f"2026-01-01T{when}:00:00Z"}
    github_fake.artifacts[900] = [(f"turncheck-report-{base}",
                                   forged_report(repo.path / "turncheck-report.json", tmp_path))]
    github_fake.artifact_runs[900] = {**FORK_RUN, "head_sha": base,
                                      "created_at": "2026-01-02T00:00:00Z"}
    repo.branch("feature", checkout=True)
    repo.write(SUITE, repeated.replace("What is 2 + 2?", "What is 2 + 2 exactly?"))
    head = repo.commit("reworded")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "baseline": "artifact", "fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 runs of its commit pooled" in run.stdout
    assert run.report is not None
    pool = run.report["baseline"]["pool"]
    assert pool["runs"] == 2 and pool["history_runs"] == 2 and not pool["stale"]
    # Every pooled eval holds the two samples of each trusted run, none of the fork's.
    assert all(len(e["runs"]) == 2 for e in pool["evals"])
    samples = [len(e["samples"]) for s in run.report["base"]["suites"] for e in s["evals"]]
    assert samples and set(samples) == {4}
    assert not github_fake.requests_matching("GET", "/actions/runs/900/artifacts")
    [comment] = github_fake.comments_on(PR)
    assert "2 runs of its commit pooled" in comment.body
