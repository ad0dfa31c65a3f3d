"""Issue 33, items 2 and 7, through the real action against the fake GitHub:

- a warning (an unknown metadata key) is not presented as something that could not run
  and does not fail the check; it is shown quietly;
- every path the comment, the check run and the step summary show is relative to the
  repository (a missing recording names `evals/…` and the record command for it), never
  the runner's checkout directory.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.action_harness import PR, run_pull_request, suite_text
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import PASSING_EVALS, SUITE, feature_branch_repo
from tests.support.scripted_server import ScriptedServer

UNRECORDED_EVAL = (
    "  - name: japan\n"
    "    prompt: What is the capital of Japan?\n"
    "    checks: [{match: '*Japan*'}]\n"
)


def with_unknown_metadata_key(text: str) -> str:
    return text.replace("metadata:\n", "metadata:\n  mcp_server: tools\n", 1)


def test_a_warning_is_quiet_and_does_not_fail_the_check(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub,
) -> None:
    base_text = suite_text(model.base_url, PASSING_EVALS)
    repo, base, head = feature_branch_repo(tmp_path / "repo", base_text,
                                           with_unknown_metadata_key(base_text))
    ran = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [comment] = github_fake.comments_on(PR)
    assert "Could not run" not in comment.body
    assert "⚠️ 1 warning" in comment.body
    assert 'unknown metadata key "mcp\\_server" is ignored' in comment.body
    [check] = [c for c in github_fake.check_runs_named("turncheck") if c.head_sha == head]
    assert check.conclusion == "success", check.output


def test_a_missing_recording_is_named_relative_to_the_repository(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub,
) -> None:
    base_text = suite_text(model.base_url, PASSING_EVALS)
    repo, base, head = feature_branch_repo(tmp_path / "repo", base_text,
                                           base_text + UNRECORDED_EVAL, record_head=False)
    ran = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    [comment] = github_fake.comments_on(PR)
    [check] = [c for c in github_fake.check_runs_named("turncheck") if c.head_sha == head]
    cassette = SUITE.replace(".eval.yaml", ".eval.cassette.yaml")
    shown = [comment.body, ran.summary, str(check.output)]
    for text in shown:
        plain = text.replace("\\", "")  # the comment escapes Markdown
        assert f"in {cassette}; record it with: turncheck record {SUITE}" in plain, text
        assert str(tmp_path) not in text
        assert str(repo.path) not in text
    assert ran.report is not None
    assert f"record it with: turncheck record {SUITE}" in str(ran.report)
    assert str(tmp_path) not in str(ran.report)
