"""Secrets are bound late and cannot be transformed (issue 10, item 1).

A template renders `secret('X')` as the token `<SECRET:X>`; only the outgoing request
carries the value. Every transformation of a secret in a protocol template is an error
at its line, and reserved names (the runner's, the action's inputs, the API keys) are
refused in both template languages.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.action_harness import PR, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.scripted_server import ScriptedServer
from turncheck.formats.protocol_templates import Scope, check_template
from turncheck.providers.cassette_file import cassette_path_for

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-Tr4nsformMe-0042"


def forms(secret: str) -> list[str]:
    """Every transformed form a template could have produced (long enough to be telling)."""
    return [secret, secret[::-1], secret.upper(), secret.lower(), secret[1:], secret[:-1],
            ".".join(secret), ".".join(secret[::-1]), secret[2:12], secret.swapcase(),
            base64.b64encode(secret.encode()).decode().rstrip("=")]


def assert_no_form(text: str, where: str) -> None:
    for form in forms(SECRET):
        assert form not in text, f"{form!r} leaked into {where}"


def protocol_text(base_url: str, prompt: str, name: str = "secretive") -> str:
    return (
        f"metadata: {{name: {name}, model: gpt-4o-mini, provider: openai, "
        f"base_url: '{base_url}'}}\n"
        "cases: [{id: one}]\n"
        "turns:\n"
        "  - id: ask\n"
        f"    prompt: |\n{prompt}"
    )


WHOLE = "      token {{ secret('TC_TOKEN') }}\n"
TRANSFORMS = (
    "      reversed {{ secret('TC_TOKEN') | reverse }}\n"
    "      upper {{ secret('TC_TOKEN') | upper }}\n"
    "      sliced {{ secret('TC_TOKEN')[2:12] }}\n"
    "      joined {{ secret('TC_TOKEN') | list | join('.') }}\n"
)


@pytest.mark.parametrize("source", [
    "{{ secret('TOK') | reverse }}", "{{ secret('TOK') | upper }}", "{{ secret('TOK')[1:] }}",
    "{{ secret('TOK') | list | join('.') }}", "{{ secret('TOK') ~ 'x' }}",
    "{{ secret('TOK').upper() }}", "{% for c in secret('TOK') %}{{ c }}{% endfor %}",
    "{% set s %}{{ secret('TOK') }}{% endset %}{{ s | reverse }}",
    "{% filter reverse %}{{ secret('TOK') }}{% endfilter %}",
    "{% set f = secret %}{{ f('TOK') | reverse }}", "{{ secret('TOK') == 'abc' }}",
])
def test_every_transformation_of_a_secret_is_an_error(source: str) -> None:
    analysis = check_template("line one\n" + source, Scope(turns=[], current=0, cases=[]))
    codes = [(p.lineno, p.code) for p in analysis.problems if p.severity == "error"]
    assert (2, "secret-transformed") in codes


def test_outputting_a_secret_whole_is_allowed() -> None:
    source = "a {{ secret('TOK') }} b\n{% if true %}{{ secret('TOK') }}{% endif %}"
    analysis = check_template(source, Scope(turns=[], current=0, cases=[]))
    assert analysis.problems == [] and analysis.secrets == {"TOK"}


def turncheck(*args: str, env: dict[str, str],
              cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    return subprocess.run([sys.executable, "-m", "turncheck", *args], capture_output=True,
                          text=True, cwd=cwd, env={**full_env, **env}, timeout=180)


def test_transforms_and_reserved_names_are_diagnostics_at_their_lines(tmp_path: Path) -> None:
    protocol = tmp_path / "leaky.eval.yaml"
    protocol.write_text(protocol_text("http://127.0.0.1:9/v1", TRANSFORMS))
    reserved = tmp_path / "reserved.eval.yaml"
    reserved.write_text(
        "metadata: {name: reserved, model: gpt-4o-mini}\n"
        "evals:\n"
        "  - prompt: \"{{secret('GITHUB_TOKEN')}}\"\n"
        "    checks: [{match: x}]\n"
    )
    reserved_protocol = tmp_path / "input.eval.yaml"
    reserved_protocol.write_text(protocol_text("http://127.0.0.1:9/v1",
                                               "      {{ secret('INPUT_GITHUB-TOKEN') }}\n"))
    done = turncheck("validate", str(tmp_path), env={})
    assert done.returncode == 1
    out = done.stdout + done.stderr
    for line in (6, 7, 8, 9):
        assert f"leaky.eval.yaml:{line}:" in out
    assert out.count("may only be output whole") == 4
    assert "reserved.eval.yaml:3:" in out and "secret('GITHUB_TOKEN') is refused" in out
    assert "input.eval.yaml:6:" in out and "secret('INPUT_GITHUB-TOKEN') is refused" in out
    assert "Traceback" not in out


def echo(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return "you said: " + str(messages[-1]["content"])


def test_record_sends_the_value_but_stores_and_prints_only_the_token(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(echo)
    good = tmp_path / "good.eval.yaml"
    good.write_text(protocol_text(scripted_server.base_url, WHOLE))
    leaky = tmp_path / "leaky.eval.yaml"
    leaky.write_text(protocol_text(scripted_server.base_url, TRANSFORMS, name="leaky"))
    suite = tmp_path / "plain.eval.yaml"
    suite.write_text(
        f"metadata: {{name: plain, model: gpt-4o-mini, provider: openai, "
        f"base_url: '{scripted_server.base_url}'}}\n"
        "evals:\n  - prompt: \"key {{secret('TC_TOKEN')}}\"\n    checks: [{match: '*key*'}]\n"
    )
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    env = {"TC_TOKEN": SECRET, "OPENAI_API_KEY": "sk-test-key-0000"}
    done = turncheck("run", str(tmp_path), "--mode", "record", "--json", str(report),
                     "--junit", str(junit), env=env)
    assert done.returncode == 1  # the leaky suite is invalid
    # The provider, and only the provider, got the value.
    contents = [m["content"] for r in scripted_server.requests for m in r.json["messages"]]
    assert f"token {SECRET}\n" in contents and f"key {SECRET}" in contents
    assert len(scripted_server.requests) == 2  # the leaky suite never ran
    stored = {
        "console": done.stdout + done.stderr,
        "report": report.read_text(),
        "junit": junit.read_text(),
        "good cassette": cassette_path_for(good).read_text(),
        "plain cassette": cassette_path_for(suite).read_text(),
    }
    for where, text in stored.items():
        assert_no_form(text, where)
    assert "<SECRET:TC_TOKEN>" in stored["good cassette"]
    assert "token <SECRET:TC_TOKEN>" in stored["report"]

    # Replay matches the token form and needs no value at all.
    again = turncheck("run", str(good), str(suite), "--mode", "replay", env={})
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(scripted_server.requests) == 2


def test_live_run_without_the_secret_set_is_an_error_naming_it(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(echo)
    good = tmp_path / "good.eval.yaml"
    good.write_text(protocol_text(scripted_server.base_url, WHOLE))
    report = tmp_path / "report.json"
    done = turncheck("run", str(good), "--mode", "live", "--json", str(report),
                     env={"OPENAI_API_KEY": "sk-test-key-0000"})
    assert done.returncode == 1
    assert scripted_server.requests == []
    assert "secret 'TC_TOKEN' is not set" in report.read_text()


def test_action_comment_summary_report_and_check_hold_no_form_of_a_secret(
    tmp_path: Path, scripted_server: ScriptedServer, github_fake: FakeGitHub
) -> None:
    scripted_server.add_rule(echo)
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "x")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.write("evals/good.eval.yaml",
               protocol_text(scripted_server.base_url, "      token {{ secret('TC_TOKEN') }}\n"))
    repo.write("evals/leaky.eval.yaml",
               protocol_text(scripted_server.base_url, TRANSFORMS, name="leaky"))
    head = repo.commit("secrets")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"mode": "live", "fail-on": "invalid"},
                           extra_env={"TC_TOKEN": SECRET, "OPENAI_API_KEY": "sk-test-0000"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert any(SECRET in str(r.json) for r in scripted_server.requests)
    [comment] = github_fake.comments_on(PR)
    [check] = github_fake.check_runs.values()
    published = {
        "console": run.stdout + run.stderr,
        "step summary": run.summary,
        "report": json.dumps(run.report),
        "comment": comment.body,
        "check run": json.dumps([check.output, check.annotations], default=str),
    }
    for where, text in published.items():
        assert_no_form(text, where)
    assert any(a["path"] == "evals/leaky.eval.yaml" for a in check.annotations)
