"""Issue 46, item 3: the recording proxy relays only the model APIs, only for the app
turncheck started, and never hands turncheck's keys back to the app."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import APPS, upstream_env
from turncheck.report.results import Status

PROBER = APPS / "proxy_prober.py"
SUITE = f"""\
metadata:
  name: prober
  target:
    command: [{sys.executable}, {PROBER}]
evals:
  - name: probes
    prompt: go
    checks:
      - match: "*probes*"
"""


def test_the_proxy_refuses_all_but_the_app_s_own_model_calls_and_records_those(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    suite = write_suite(tmp_path, SUITE)
    with ScriptedServer(default_reply="recorded answer") as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        reached = sorted(r.path for r in server.requests)
    [result] = report.suites[0].evals
    assert result.status == Status.PASS, result.error
    answer = json.loads(result.turns[0].response)
    assert answer["model"] == "recorded answer"
    assert answer["probes"] == {name: 403 for name in (
        "files", "delete", "traversal", "encoded", "crlf", "no-key", "stranger")}
    assert reached == ["/v1/chat/completions", "/v1/embeddings", "/v1/messages",
                       "/v1/responses"]
    cassette = (tmp_path / "scripted.eval.cassette.yaml").read_text()
    for path in ("/chat/completions", "/responses", "/embeddings", "/v1/messages"):
        assert path in cassette
    for probe in ("/files", "/models/x", "admin"):
        assert probe not in cassette
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 7
    assert all("\n" not in r.getMessage() for r in refusals)
    assert "Traceback" not in caplog.text
