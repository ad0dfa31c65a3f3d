"""`--base-url` (and a suite's `base_url`) reaches every provider it was given for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.engine_helpers import suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main
from turncheck.providers.factory import base_url_for

ONE_EVAL = "  - prompt: Say hello\n    checks:\n      - match: '*hello*'\n"


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")


def _statuses(report: Path) -> list[str]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [e["status"] for s in data["suites"] for e in s["evals"]]


@pytest.mark.usefixtures("keys")
def test_base_url_with_provider_anthropic_reaches_that_server(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("hello there")
    suite = write_suite(tmp_path, suite_yaml(ONE_EVAL, model="claude-3-5-haiku-latest"))
    report = tmp_path / "r.json"
    code = main(["run", str(suite), "--mode", "live", "--provider", "anthropic",
                 "--base-url", scripted_server.base_url, "--quiet", "--json", str(report),
                 "--attempts", "1"])
    assert code == 0
    assert _statuses(report) == ["pass"]
    [request] = scripted_server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"


@pytest.mark.usefixtures("keys")
def test_a_suites_anthropic_base_url_is_recorded_and_replayed(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("hello there")
    metadata = f"  provider: anthropic\n  base_url: {scripted_server.base_url}\n"
    suite = write_suite(tmp_path, suite_yaml(ONE_EVAL, metadata=metadata,
                                             model="claude-3-5-haiku-latest"))
    assert main(["record", str(suite), "--quiet", "--attempts", "1"]) == 0
    cassette = suite.with_name("scripted.eval.cassette.yaml").read_text(encoding="utf-8")
    assert f"{scripted_server.base_url}/messages" in cassette
    report = tmp_path / "r.json"
    assert main(["run", str(suite), "--quiet", "--json", str(report)]) == 0
    assert _statuses(report) == ["pass"]
    assert len(scripted_server.requests) == 1  # the recording's; replay sent nothing


@pytest.mark.usefixtures("keys")
def test_base_url_with_provider_openrouter_reaches_that_server(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("hello there")
    suite = write_suite(tmp_path, suite_yaml(ONE_EVAL, model="vendor/model"))
    code = main(["run", str(suite), "--mode", "live", "--provider", "openrouter",
                 "--base-url", scripted_server.base_url, "--quiet", "--attempts", "1"])
    assert code == 0
    assert [r.path for r in scripted_server.requests] == ["/v1/chat/completions"]


def test_the_url_belongs_to_the_provider_it_was_given_with() -> None:
    url = "http://127.0.0.1:9/v1"
    assert base_url_for("anthropic", "anthropic", url) == url
    # Semantic checks of an Anthropic suite embed through OpenAI: not at the Anthropic URL.
    assert base_url_for("openai", "anthropic", url) is None
    # A URL with no provider is an OpenAI-compatible server; an `anthropic:` judge keeps its own.
    assert base_url_for("openai", None, url) == url
    assert base_url_for("anthropic", None, url) is None
    assert base_url_for("openrouter", "openrouter", url) == url
