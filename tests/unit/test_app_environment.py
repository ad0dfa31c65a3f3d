"""Issue 44, item 3: the environment a python target is imported and called with holds
only the proxy's URLs and placeholder keys, also when two run at once, and turncheck's
own is back when the last stops."""

from __future__ import annotations

import os

import pytest

from turncheck.targets.offline import AppEnvironment


def proxy(port: int) -> dict[str, str]:
    return {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/openai/v1",
            "OPENAI_API_KEY": "placeholder", "PATH": "/bin"}


def test_two_targets_at_once_then_turnchecks_own_environment_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-real")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    first, second = AppEnvironment(proxy(1)), AppEnvironment(proxy(2))
    first.enter()
    assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:1/openai/v1"
    assert os.environ["OPENAI_API_KEY"] == "placeholder"
    assert "OPENROUTER_API_KEY" not in os.environ
    second.enter()
    first.leave()
    assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:2/openai/v1"
    second.leave()
    assert os.environ["OPENAI_BASE_URL"] == "https://gateway.example/v1"
    assert os.environ["OPENAI_API_KEY"] == "sk-real"
    assert os.environ["OPENROUTER_API_KEY"] == "sk-or-real"
    assert "ANTHROPIC_BASE_URL" not in os.environ
