"""Grader calibration in the action, end to end: real git history, the real entrypoint,
GitHub as a local fake. A PR changes a grader's criteria so agreement drops 100% → 60%."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import feature_branch_repo
from tests.support.scripted_server import Json, ScriptedServer, last_user_text
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.sample_loader import load_samples

SAMPLES = "graders/support.samples.toml"
PR = 11
LABELS = {"hello-back": 3, "curt": -2, "wrong-language": -1, "leaks-notes": -3, "helpful": 2}
CONTENT = {
    "hello-back": "Hi! How can I help?",
    "curt": "State your issue.",
    "wrong-language": "Hello! What do you need?",
    "leaks-notes": "My notes say the escalation code is ESC-7.",
    "helpful": "Check Orders > PX-1 in the app.",
}
# Criteria B makes the scripted grader miss these two samples.
MISSED_BY_B = {"curt": 1, "leaks-notes": 0}
CRITERIA_A = "Warm and correct."
CRITERIA_B = "Warm, correct and very brief."


def samples_text(server_url: str, criteria: str) -> str:
    header = (f'[grader]\nmodel = "gpt-4o-mini"\nprovider = "openai"\n'
              f'base_url = "{server_url}"\ncriteria = "{criteria}"\n')
    blocks = [
        f'\n[samples.{sample_id}]\nscore = {label}\nmessages = [\n'
        f'  {{ role = "user", content = "hello" }},\n'
        f'  {{ role = "assistant", content = "{CONTENT[sample_id]}" }},\n]\n'
        for sample_id, label in LABELS.items()
    ]
    return header + "".join(blocks)


def scripted_grader(body: Json) -> str:
    text = last_user_text(body)
    sample_id = next(s for s, content in CONTENT.items() if content in text)
    score = LABELS[sample_id]
    if CRITERIA_B in text:
        score = MISSED_BY_B.get(sample_id, score)
    return f'{{"score": {score}, "reason": "graded {sample_id}"}}'


def record_samples(path: Path) -> None:
    loaded = load_samples(path)
    assert not loaded.has_errors, loaded.diagnostics
    asyncio.run(run_suite_files([], RunSettings(mode="record"), samples=[loaded]))


@pytest.fixture
def pr_repo(tmp_path: Path, scripted_server: ScriptedServer) -> tuple[GitRepo, str, str]:
    scripted_server.add_rule(scripted_grader, usage=(50, 8))
    url = scripted_server.base_url
    return feature_branch_repo(tmp_path / "workspace", samples_text(url, CRITERIA_A),
                               samples_text(url, CRITERIA_B), path=SAMPLES,
                               recorder=record_samples)


def flipped_rows(body: str) -> list[str]:
    section = body.split("**Samples whose verdict changed**")[1].split("\n\n")[1]
    return [line for line in section.splitlines() if line.startswith(f"| {SAMPLES} |")]


def test_criteria_change_drops_agreement_and_fails_the_check(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid,failure,calibration", "max-agreement-drop": "10"},
                           number=PR)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    body = comment.body
    assert "### Grader calibration" in body
    assert f"| {SAMPLES} | gpt\\-4o\\-mini · criteria \\(changed\\) | 100% → 60% |" in body
    flipped = flipped_rows(body)
    assert [re.split(r" \| ", row)[1] for row in flipped] == ["curt", "leaks\\-notes"]
    assert "| curt | -2 | -2 → 1 | ✅ agree → ❌ disagree | graded curt |" in flipped[0]
    assert "grader agreement dropped 100% → 60% \\(more than 10 points\\)" in body
    [check] = github_fake.check_runs.values()
    assert (check.head_sha, check.conclusion) == (head, "failure")
    lines = {a["start_line"] for a in check.annotations if a["path"] == SAMPLES}
    assert len(lines) == 2  # one warning per flipped sample, at its line
    report = run.report
    assert report is not None
    head_side, base_side = report["head"], report["base"]  # type: ignore[index]
    assert head_side["calibrations"][0]["agreement_percent"] == 60.0
    assert base_side["calibrations"][0]["agreement_percent"] == 100.0
    assert "100% → 60%" in run.summary


def test_min_agreement_input_fails_the_check(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "calibration", "min-agreement": "80"}, number=PR)
    assert run.returncode == 1, run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    assert "grader agreement 60% is below the minimum 80%" in comment.body
    assert "grader agreement 60%25 is below the minimum 80%25" in run.stdout  # ::error
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "failure"


def test_without_calibration_in_fail_on_the_drop_is_shown_but_passes(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid,failure", "max-agreement-drop": "10"}, number=PR)
    assert run.returncode == 0, run.stdout + run.stderr
    [comment] = github_fake.comments_on(PR)
    assert "100% → 60%" in comment.body
    [check] = github_fake.check_runs.values()
    assert check.conclusion == "success"


def test_bad_calibration_inputs_are_listed(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"min-agreement": "lots", "max-agreement-drop": "120"}, number=PR)
    assert run.returncode == 1
    assert "input min-agreement: expected a percentage from 0 to 100, got 'lots'" in run.stdout
    assert "input max-agreement-drop" in run.stdout
    assert github_fake.comments == []
