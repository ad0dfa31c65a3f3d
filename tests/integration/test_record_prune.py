"""`turncheck record --prune`: a cassette keeps only what the recording run used.

Re-recording after a prompt change used to keep the old answers beside the new ones, so
a cassette only grew and its diff (which reviewers read) mixed stale and new requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main

SUITE = """\
metadata: {name: prune, model: gpt-4o-mini}
evals:
  - name: capital
    prompt: What is the capital of France?
    checks:
      - match: '*Paris*'
        prompt: Are you sure? Name the city.
        checks: [{match: '*Paris*'}]
  - name: greeting
    prompt: Say hello.
    checks: [{match: '*hello*'}]
"""


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    return _script(scripted_server)


def _script(scripted_server: ScriptedServer) -> ScriptedServer:
    scripted_server.add_rule("It is Paris.", contains="Name the city")
    scripted_server.add_rule("It is Paris.", contains="capital of France")
    scripted_server.add_rule("I think Lyon.", contains="largest city")
    scripted_server.add_rule("hello there")
    return scripted_server


def _suite(folder: Path, text: str = SUITE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prune.eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _record(suite: Path, server: ScriptedServer, *extra: str) -> int:
    return main(["record", str(suite), "--base-url", server.base_url, "--quiet",
                 "--attempts", "1", *extra])


def _interactions(suite: Path) -> list[tuple[str, str]]:
    """(URI, the last user message) of every recorded request."""
    cassette = suite.with_name("prune.eval.cassette.yaml")
    data: dict[str, Any] = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    found = []
    for interaction in data["interactions"]:
        request = interaction["request"]
        body = json.loads(request["body"])
        found.append((request["uri"], body["messages"][-1]["content"]))
    return sorted(found)


def _replay(suite: Path, server: ScriptedServer, tmp_path: Path) -> list[str]:
    report = tmp_path / "replayed.json"
    main(["run", str(suite), "--base-url", server.base_url, "--quiet", "--json", str(report)])
    data = json.loads(report.read_text(encoding="utf-8"))
    return [e["status"] for s in data["suites"] for e in s["evals"]]


def _change_prompt(suite: Path) -> None:
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace("What is the capital of France?",
                                  "What is the largest city of France?"), encoding="utf-8")


def test_after_a_prompt_change_prune_leaves_only_the_used_interactions(
    tmp_path: Path, server: ScriptedServer
) -> None:
    suite = _suite(tmp_path / "repo")
    assert _record(suite, server) == 0
    assert len(_interactions(suite)) == 2  # both pass on turn 1
    _change_prompt(suite)
    assert _record(suite, server, "--prune") == 0  # Lyon fails turn 1; the follow-up passes
    fresh = _suite(tmp_path / "fresh", suite.read_text(encoding="utf-8"))
    assert _record(fresh, server) == 0
    assert len(_interactions(suite)) == 3
    assert [t for _, t in _interactions(suite)] == [t for _, t in _interactions(fresh)]
    assert not any("capital of France" in text for _, text in _interactions(suite))
    requests = len(server.requests)
    assert _replay(suite, server, tmp_path) == ["pass", "pass"]
    assert len(server.requests) == requests  # replay sent nothing


def test_without_prune_recording_keeps_the_old_interactions(
    tmp_path: Path, server: ScriptedServer
) -> None:
    suite = _suite(tmp_path)
    assert _record(suite, server) == 0
    _change_prompt(suite)
    _record(suite, server)
    assert any("capital of France" in text for _, text in _interactions(suite))
    assert len(_interactions(suite)) == 4


def test_a_run_with_an_unanswered_call_prunes_nothing(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(fault="server_error", contains="largest city")
    server = _script(scripted_server)
    suite = _suite(tmp_path)
    assert _record(suite, server) == 0
    _change_prompt(suite)
    assert _record(suite, server, "--prune") == 1
    assert any("capital of France" in text for _, text in _interactions(suite))


def test_a_prune_with_nothing_new_to_record_still_drops_the_unused(
    tmp_path: Path, server: ScriptedServer
) -> None:
    suite = _suite(tmp_path)
    assert _record(suite, server) == 0
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text[: text.index("  - name: greeting")], encoding="utf-8")
    requests = len(server.requests)
    assert _record(suite, server, "--prune") == 0
    assert len(server.requests) == requests
    assert [text for _, text in _interactions(suite)] == ["What is the capital of France?"]


def test_prune_with_shard_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path)
    code = main(["record", str(suite), "--prune", "--shard", "1/2",
                 "--price-timestamp", "2025-01-01T00:00:00Z"])
    assert code == 2
    assert "--prune cannot be used with --shard" in capsys.readouterr().err


def test_the_replay_miss_advice_records_with_prune(tmp_path: Path, server: ScriptedServer) -> None:
    suite = _suite(tmp_path)
    report = tmp_path / "miss.json"
    assert main(["run", str(suite), "--quiet", "--json", str(report)]) == 1
    errors = [e["error"] for s in json.loads(report.read_text(encoding="utf-8"))["suites"]
              for e in s["evals"]]
    assert all(f"record it with: turncheck record {suite} --prune" in e for e in errors)
