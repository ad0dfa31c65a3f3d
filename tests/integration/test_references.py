"""Suites that take their prompts from files: `{file: …}` references (issue: prompts live
where the app keeps them), change detection through them, and honest cassettes."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.action_harness import PR, record, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import PASSING_EVALS
from tests.support.scripted_server import ScriptedServer
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.references import referenced_paths
from turncheck.formats.suite_loader import load_suite

SUPPORT = "evals/support.eval.yaml"
MATH = "evals/math.eval.yaml"
PROMPT = "prompts/support.md"
REFUND_EVAL = (
    "  - name: refund-window\n"
    "    prompt: How long is the refund window?\n"
    "    checks: [{match: '*days*'}]\n"
)


def support_suite(server_url: str, extra_metadata: str = "") -> str:
    return (
        "metadata:\n  name: support\n  model: gpt-4o-mini\n  provider: openai\n"
        f"  base_url: {server_url}\n  temperature: 0\n"
        "  system_prompt: {file: ../prompts/support.md}\n"
        f"{extra_metadata}evals:\n{REFUND_EVAL}"
    )


def system_text(body: dict[str, Any]) -> str:
    return " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "system")


@pytest.fixture
def support_model(scripted_server: ScriptedServer) -> ScriptedServer:
    scripted_server.add_rule("Refunds within 14 days.", when=lambda b: "14 days" in system_text(b))
    scripted_server.add_rule("Refunds within 30 days.", when=lambda b: "30 days" in system_text(b))
    scripted_server.add_rule("4", contains="2 + 2", usage=(12, 1))
    return scripted_server


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def minimal(metadata: str = "", prompt: str = "hi") -> str:
    return (f"metadata:\n  name: s\n  model: gpt-4o-mini\n{metadata}"
            f"evals:\n  - prompt: {prompt}\n    checks: [{{match: '*'}}]\n")


# -- loading ----------------------------------------------------------------------------


def test_every_prompt_bearing_field_takes_a_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "prompts/system.md": "Be terse.\n", "prompts/ask.md": "What is 15 * 7?",
        "prompts/retry.md": "Try again.", "prompts/criteria.md": "Says 105.",
        "prompts/expected.md": "one hundred and five",
        "evals/s.eval.yaml": (
            "metadata:\n  name: s\n  model: gpt-4o-mini\n"
            "  system_prompt: {file: ../prompts/system.md}\n"
            "evals:\n  - prompt: {file: ../prompts/ask.md}\n    checks:\n"
            "      - llm_judge: {criteria: {file: ../prompts/criteria.md}}\n"
            "      - semantic: {expected: {file: ../prompts/expected.md}, threshold: 0.5}\n"
            "      - prompt: {file: ../prompts/retry.md}\n        checks: [{match: '*105*'}]\n"),
    })
    loaded = load_suite(tmp_path / "evals/s.eval.yaml")
    assert not loaded.has_errors, loaded.diagnostics
    assert loaded.suite is not None
    dumped = json.dumps(loaded.suite.model_dump(by_alias=True))
    for text in ("Be terse.", "What is 15 * 7?", "Try again.", "Says 105.",
                 "one hundred and five"):
        assert text in dumped
    assert sorted(r.path for r in loaded.references) == [
        "prompts/ask.md", "prompts/criteria.md", "prompts/expected.md", "prompts/retry.md",
        "prompts/system.md"]


@pytest.mark.parametrize("reference, expected", [
    ("../../outside.md", "outside the repository"),
    ("/etc/passwd", "must be a relative path"),
    ("link.md", "a symlink that leads outside the repository"),
    ("missing.md", "does not exist"),
])
def test_a_reference_leaving_the_repository_or_missing_is_a_diagnostic_at_its_line(
        tmp_path: Path, reference: str, expected: str) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "outside.md").write_text("secret text", encoding="utf-8")
    (repo / "evals").mkdir()
    os.symlink(tmp_path / "outside.md", repo / "evals" / "link.md")
    text = minimal(f"  system_prompt: {{file: {reference}}}\n")
    (repo / "evals/s.eval.yaml").write_text(text, encoding="utf-8")
    loaded = load_suite(repo / "evals/s.eval.yaml", "evals/s.eval.yaml")
    [problem] = [d for d in loaded.diagnostics if d.is_error]
    assert (problem.line, problem.column, problem.code) == (4, 18, "invalid-reference")
    assert expected in problem.message
    assert loaded.suite is None  # never run with text missing
    assert "secret text" not in json.dumps([d.model_dump() for d in loaded.diagnostics])


def test_messages_file_chain_is_followed_and_a_cycle_reported(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "prompts/agent.md": "You are the Acme agent.",
        "prompts/opening.json": json.dumps([
            {"role": "system", "content": {"file": "agent.md"}},
            {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]),
        "evals/s.eval.yaml": minimal("  messages: {file: ../prompts/opening.json}\n"),
    })
    loaded = load_suite(tmp_path / "evals/s.eval.yaml")
    assert not loaded.has_errors, loaded.diagnostics
    assert loaded.suite is not None and loaded.suite.metadata.messages is not None
    assert [m.content for m in loaded.suite.metadata.messages] == [
        "You are the Acme agent.", "Hello", "Hi!"]
    chain = {r.path for r in referenced_paths(tmp_path / "evals/s.eval.yaml", tmp_path)}
    assert chain == {"prompts/opening.json", "prompts/agent.md"}

    write(tmp_path, {"prompts/a.json": json.dumps([{"file": "b.json"}]),
                     "prompts/b.json": json.dumps([{"file": "a.json"}]),
                     "evals/c.eval.yaml": minimal("  messages: {file: ../prompts/a.json}\n")})
    cyclic = load_suite(tmp_path / "evals/c.eval.yaml")
    [problem] = [d for d in cyclic.diagnostics if d.is_error]
    assert "reference cycle: prompts/a.json → prompts/b.json → prompts/a.json" in problem.message
    assert problem.line == 4


def test_vars_come_from_a_data_file(tmp_path: Path, support_model: ScriptedServer) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "vars.yaml": "window: 30 days\n",
        "evals/s.eval.yaml": support_suite(support_model.base_url,
                                           "  vars: {file: ../vars.yaml}\n").replace(
            "{file: ../prompts/support.md}", "\"Refunds: {{var('window')}}\""),
    })
    loaded = load_suite(tmp_path / "evals/s.eval.yaml")
    assert not loaded.has_errors, loaded.diagnostics
    report = asyncio.run(run_suite_files([loaded], RunSettings(mode="live")))
    assert report.suites[0].evals[0].status.value == "pass"
    assert "Refunds: 30 days" in system_text(support_model.requests[-1].json)


# -- cassettes -----------------------------------------------------------------------------


def test_replay_after_a_prompt_file_change_names_the_file(
        tmp_path: Path, support_model: ScriptedServer) -> None:
    (tmp_path / ".git").mkdir()
    text = support_suite(support_model.base_url).replace(
        "evals:\n", "evals:\n" + PASSING_EVALS)
    write(tmp_path, {PROMPT: "Refund window: 30 days.", SUPPORT: text})
    record(tmp_path / SUPPORT)
    (tmp_path / PROMPT).write_text("Refund window: 14 days.", encoding="utf-8")
    report = asyncio.run(run_suite_files([load_suite(tmp_path / SUPPORT)], RunSettings()))
    by_name = {e.name: e for e in report.suites[0].evals}
    # Every turn carries the system prompt, so every eval misses — and says why.
    assert by_name["refund-window"].status.value == "error"
    assert "prompts/support.md changed since the cassette was recorded" in (
        by_name["refund-window"].error or "")
    assert "turncheck record" in (by_name["refund-window"].error or "")


# -- pull requests ---------------------------------------------------------------------------


@pytest.fixture
def prompt_repo(tmp_path: Path, support_model: ScriptedServer) -> tuple[GitRepo, str]:
    """main: a suite whose system prompt is prompts/support.md, and an unrelated suite."""
    repo = GitRepo(tmp_path / "workspace")
    repo.write(PROMPT, "You are Acme support. Refund window: 30 days.\n")
    repo.write(SUPPORT, support_suite(support_model.base_url))
    repo.write(MATH, suite_text(support_model.base_url, PASSING_EVALS))
    record(repo.path / SUPPORT)
    record(repo.path / MATH)
    return repo, repo.commit("base")


def test_a_pr_changing_only_the_prompt_file_runs_the_suites_that_reference_it(
        tmp_path: Path, prompt_repo: tuple[GitRepo, str], github_fake: FakeGitHub) -> None:
    repo, base = prompt_repo
    repo.branch("feature", checkout=True)
    repo.write(PROMPT, "You are Acme support. Refund window: 14 days.\n")
    record(repo.path / SUPPORT)
    head = repo.commit("shorter refund window")

    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    head_suites = [s["path"] for s in run.report["head"]["suites"]]  # type: ignore[index]
    base_suites = [s["path"] for s in run.report["base"]["suites"]]  # type: ignore[index]
    assert head_suites == base_suites == [SUPPORT]
    assert run.report["reasons"] == {SUPPORT: [f"{PROMPT} changed"]}

    # Base ran the base commit's prompt, head the PR's: the answers differ accordingly.
    def answer(side: str) -> str:
        suite = run.report[side]["suites"][0]  # type: ignore[index]
        return str(suite["evals"][0]["turns"][0]["response"])
    assert (answer("base"), answer("head")) == ("Refunds within 30 days.",
                                                "Refunds within 14 days.")
    [comment] = github_fake.comments_on(PR)
    assert "Why these suites ran" in comment.body
    assert "prompts/support.md changed" in comment.body


def test_a_pr_changing_an_unrelated_file_runs_nothing(
        tmp_path: Path, prompt_repo: tuple[GitRepo, str], github_fake: FakeGitHub) -> None:
    repo, base = prompt_repo
    repo.branch("feature", checkout=True)
    repo.write("docs/notes.md", "unrelated\n")
    head = repo.commit("docs")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    assert run.report["head"]["suites"] == []  # type: ignore[index]
    assert run.report["base"] is None


def test_watch_globs_run_a_suite_for_files_no_reference_names(
        tmp_path: Path, prompt_repo: tuple[GitRepo, str], github_fake: FakeGitHub,
        support_model: ScriptedServer) -> None:
    repo, _ = prompt_repo
    repo.write(SUPPORT, support_suite(support_model.base_url, "  watch: ['app/prompting/**']\n"))
    base = repo.commit("watch the prompt builder")
    repo.branch("feature", checkout=True)
    repo.write("app/prompting/build.py", "PROMPT = 'x'\n")
    head = repo.commit("prompt builder")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"watch": "config/*.toml"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    assert run.report["reasons"] == {
        SUPPORT: ["app/prompting/build.py changed (watch: app/prompting/**)"]}

    repo.write("config/app.toml", "x = 1\n")
    head = repo.commit("repository-wide watch")
    run = run_pull_request(repo, tmp_path / "runner2", github_fake, base, head,
                           {"watch": "config/*.toml"})
    assert run.report is not None
    assert sorted(run.report["reasons"]) == [MATH, SUPPORT]  # type: ignore[arg-type]


def test_deleting_a_referenced_file_runs_the_suite_and_reports_the_broken_reference(
        tmp_path: Path, prompt_repo: tuple[GitRepo, str], github_fake: FakeGitHub) -> None:
    repo, base = prompt_repo
    repo.branch("feature", checkout=True)
    repo.remove(PROMPT)
    head = repo.commit("drop the prompt file")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)
    assert run.returncode == 1, run.stdout + run.stderr  # fail-on includes validation errors
    assert run.report is not None
    problems = run.report["head"]["diagnostics"]  # type: ignore[index]
    assert any(p["file"] == SUPPORT and "does not exist" in p["message"] for p in problems)
    assert [s["path"] for s in run.report["base"]["suites"]] == [SUPPORT]  # type: ignore[index]


def test_a_grader_takes_its_criteria_from_a_file_and_sample_files_depend_on_it(
        tmp_path: Path) -> None:
    from turncheck.formats.sample_loader import load_samples
    from turncheck.sides.dependencies import dependencies_of

    (tmp_path / ".git").mkdir()
    write(tmp_path, {
        "prompts/tone.md": "Warm, brief, on topic.",
        "graders/tone.samples.toml": (
            '[grader]\nmodel = "gpt-4o-mini"\ncriteria = { file = "../prompts/tone.md" }\n\n'
            '[[samples]]\nmessages = [{ role = "user", content = "hi" },\n'
            '  { role = "assistant", content = "Hello!" }]\nexpected = { score = 3 }\n'),
        "graders/bad.samples.toml": (
            '[grader]\nmodel = "gpt-4o-mini"\ncriteria = { file = "/etc/passwd" }\n\n'
            '[[samples]]\nmessages = [{ role = "user", content = "hi" }]\n'
            'expected = { score = 3 }\n'),
    })
    loaded = load_samples(tmp_path / "graders/tone.samples.toml")
    assert not loaded.has_errors, loaded.diagnostics
    assert loaded.grader is not None and loaded.grader.criteria == "Warm, brief, on topic."
    bad = load_samples(tmp_path / "graders/bad.samples.toml", "graders/bad.samples.toml")
    [problem] = [d for d in bad.diagnostics if d.is_error]
    assert problem.code == "invalid-reference" and problem.line == 3
    deps = dependencies_of(tmp_path, tmp_path, [], ["graders/tone.samples.toml"])
    assert deps.samples == {"prompts/tone.md": ["graders/tone.samples.toml"]}
