"""`turncheck.run_suites` in live and record mode goes the command line's way into the
engine: the provider's API key comes from the process's environment, and recording
writes a cassette the key never reaches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import turncheck
from tests.support.scripted_server import ScriptedServer

KEY = "sk-ant-from-the-environment-9137"
SUITE = """\
metadata:
  name: api-modes
  model: claude-test
  provider: anthropic
  base_url: {base_url}
evals:
  - name: multiply
    prompt: What is 15 * 7?
    checks:
      - match: "*105*"
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        running.add_rule("15 * 7 = 105", contains="15 * 7")
        yield running


def _suite(tmp_path: Path, server: ScriptedServer) -> Path:
    path = tmp_path / "api.eval.yaml"
    path.write_text(SUITE.format(base_url=server.base_url), encoding="utf-8")
    return path


def test_live_mode_takes_the_key_from_the_environment(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    report = turncheck.run_suites([_suite(tmp_path, server)], mode="live")
    [result] = report.suites[0].evals
    assert (result.status, result.error) == ("pass", None)
    assert [r.headers.get("x-api-key") for r in server.requests] == [KEY]
    assert not (tmp_path / "api.eval.cassette.yaml").exists()


def test_record_mode_records_with_the_key_from_the_environment(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    report = turncheck.run_suites([_suite(tmp_path, server)], mode="record")
    assert report.suites[0].evals[0].status == "pass"
    cassette = (tmp_path / "api.eval.cassette.yaml").read_text(encoding="utf-8")
    assert "15 * 7 = 105" in cassette
    assert KEY not in cassette
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replayed = turncheck.run_suites([tmp_path / "api.eval.yaml"])  # no key, no network
    assert replayed.suites[0].evals[0].status == "pass"
    assert len(server.requests) == 1


def test_without_the_key_live_mode_names_the_variable(
        tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    report = turncheck.run_suites([_suite(tmp_path, server)], mode="live")
    [result] = report.suites[0].evals
    assert result.status == "error"
    assert "ANTHROPIC_API_KEY" in (result.error or "")
    assert server.requests == []
