"""An app that forwards the turn header onto its model calls (`forwards_header`) gets
its conversations' turns concurrently, and every model call is still counted in its own
turn, recorded under its own sample and replayed (docs/targets.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import THREE_TURNS, http_target, memory_reply, upstream_env
from turncheck.report.results import Status
from turncheck.report.run import Report

CONVERSATIONS = 6


def _suite(folder: Path, forwards: bool, env: dict[str, str]) -> Path:
    metadata = http_target(env)
    if forwards:
        metadata += "    forwards_header: true\n"
    evals = "evals:\n" + "".join(
        THREE_TURNS.removeprefix("evals:\n").replace("name: remembers", f"name: remembers-{n}")
        .replace("My name is Ada.", f"My name is Ada ({n}).") for n in range(CONVERSATIONS))
    return write_suite(folder, metadata + evals)


def _turns(report: Report) -> list[tuple[str, Status, int | None, list[int | None]]]:
    return [(e.name, e.status, e.passed_on_turn, [t.app_model_calls for t in e.turns])
            for e in report.suites[0].evals]


def test_turns_run_concurrently_and_each_call_counts_in_its_own_turn(tmp_path: Path) -> None:
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, True, {"APP_CALLS": "2", "APP_FORWARD_HEADER": "1",
                                    "APP_INFLIGHT_FILE": str(in_flight)})
    with ScriptedServer(default_reply=memory_reply) as server:
        server.set_latency(0.2)
        recorded = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        assert len(server.requests) == CONVERSATIONS * 3 * 2
        base_url = server.base_url
    replayed = run_paths([suite], None, "replay", base_url=base_url,
                         env=upstream_env(base_url))  # the server is stopped

    expected = [(f"remembers-{n}", Status.PASS, 3, [2, 2, 2]) for n in range(CONVERSATIONS)]
    assert _turns(recorded) == expected, [e.error for e in recorded.suites[0].evals]
    assert _turns(replayed) == expected, [e.error for e in replayed.suites[0].evals]
    assert int(in_flight.read_text()) > 1  # the app answered several turns at once
    assert [e.usage for e in replayed.suites[0].evals] == \
        [e.usage for e in recorded.suites[0].evals]


def test_a_call_without_the_header_is_refused_while_turns_run_concurrently(
        tmp_path: Path) -> None:
    suite = _suite(tmp_path, True, {"APP_CALLS": "1"})  # the app forwards nothing
    with ScriptedServer(default_reply=memory_reply) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        assert server.requests == []
    for result in report.suites[0].evals:
        assert result.status is Status.ERROR
        assert "X-Turncheck-Turn" in (result.error or ""), result.error


def test_forwards_header_needs_an_http_target(tmp_path: Path) -> None:
    from turncheck.formats.target import Target

    try:
        Target.model_validate({"python": "bot:answer", "forwards_header": True})
    except ValueError as exc:
        assert "forwards_header needs an http target" in str(exc)
    else:
        raise AssertionError("forwards_header on a python target was accepted")
