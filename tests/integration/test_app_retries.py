"""Issue 46, item 4: a model call the app retries successfully counts as the success it
was, in record, live and replay alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import THREE_TURNS, http_target, memory_reply, upstream_env
from turncheck.report.results import Status


@pytest.mark.parametrize("fault", ["drop", "server_error"])
def test_a_call_the_app_retries_successfully_passes_in_record_live_and_replay(
        tmp_path: Path, fault: str) -> None:
    pytest.importorskip("openai")
    suite = write_suite(tmp_path, http_target({}) + THREE_TURNS)
    results = {}
    for mode in ("live", "record"):
        with ScriptedServer(default_reply=memory_reply) as server:
            server.add_rule(fault=fault, times=1)  # the first call fails once
            report = run_paths([suite], server, mode, env=upstream_env(server.base_url))
            assert len(server.requests) == 4  # the SDK's retry went through the proxy
            recorded_against = upstream_env(server.base_url)
        results[mode] = report.suites[0].evals[0]
    results["replay"] = run_paths([suite], None, "replay", env=recorded_against
                                  ).suites[0].evals[0]
    for mode, result in results.items():
        assert (result.status, result.passed_on_turn) == (Status.PASS, 3), (mode, result.error)
