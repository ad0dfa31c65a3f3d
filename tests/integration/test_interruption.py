"""Interruption keeps everything (issue 10, item 5).

`turncheck record` (and run/calibrate/action) stopped by SIGTERM or SIGINT saves the
cassette with every completed recording, writes a partial report whose unfinished
evals are errors with reason `interrupted`, prints one line and exits 143 / 130.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_server import ScriptedServer
from turncheck.engine.interruption import STOP, interruptible
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.cassette_transport import CassetteTransport

ROOT = Path(__file__).resolve().parents[2]
EVALS = 24


def slow_suite(tmp_path: Path, server: ScriptedServer) -> Path:
    evals = "".join(f"  - {{prompt: 'question {i}', checks: [{{match: '*ok*'}}]}}\n"
                    for i in range(EVALS))
    path = tmp_path / "slow.eval.yaml"
    path.write_text(
        f"metadata: {{name: slow, model: gpt-4o-mini, provider: openai, "
        f"base_url: '{server.base_url}'}}\nevals:\n{evals}", encoding="utf-8")
    return path


def start_record(tmp_path: Path, suite: Path) -> tuple[subprocess.Popen[str], Path]:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "turncheck", "record", str(suite), "--concurrency", "2",
         "--json", str(report)],
        cwd=ROOT, env={**env, "OPENAI_API_KEY": "sk-test-0000"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    return process, report


def wait_for_requests(server: ScriptedServer, count: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached the server"
        time.sleep(0.02)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_interrupted_record_keeps_every_completed_recording_and_a_partial_report(
    tmp_path: Path, scripted_server: ScriptedServer, signum: int, code: int
) -> None:
    scripted_server.add_rule("ok")
    scripted_server.set_latency(0.2)  # well within the grace period
    suite = slow_suite(tmp_path, scripted_server)
    process, report_path = start_record(tmp_path, suite)
    wait_for_requests(scripted_server, 5, process)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stdout + stderr
    assert "Traceback" not in stdout + stderr
    progress = [line for line in stderr.splitlines() if line.startswith("[")]
    assert all(" pass " in line for line in progress)  # nothing after the signal …
    lines = [line for line in stdout.splitlines() + stderr.splitlines()
             if line.strip() and line not in progress]
    assert len(lines) == 1 and "interrupted by" in lines[0], lines  # … but one line

    sent = len(scripted_server.requests)
    assert 5 <= sent < EVALS  # it stopped scheduling
    cassette = CassetteTransport(cassette_path_for(suite), "replay")
    assert cassette.load_error is None
    assert len(cassette) == sent  # every call in flight finished within the grace period

    report = json.loads(report_path.read_text(encoding="utf-8"))
    evals = report["suites"][0]["evals"]
    assert len(evals) == EVALS
    passed = [e for e in evals if e["status"] == "pass"]
    interrupted = [e for e in evals if e.get("reason") == "interrupted"]
    assert len(passed) == sent
    assert len(interrupted) == EVALS - sent
    assert all(e["status"] == "error" and "interrupted by" in e["error"] for e in interrupted)


def test_calls_that_outlast_the_grace_period_are_cancelled(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("ok", contains="question 0")
    scripted_server.add_rule(fault="hang")  # every other call never answers
    suite = slow_suite(tmp_path, scripted_server)
    process, report_path = start_record(tmp_path, suite)
    wait_for_requests(scripted_server, 2, process)
    time.sleep(0.3)
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 143, stdout + stderr
    assert time.monotonic() - started < 10
    assert "Traceback" not in stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    statuses = [(e["status"], e.get("reason")) for e in report["suites"][0]["evals"]]
    assert statuses[0] == ("pass", None)
    assert statuses.count(("error", "interrupted")) == EVALS - 1
    assert len(CassetteTransport(cassette_path_for(suite), "replay")) == 1


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_cpu_bound_check_does_not_make_the_run_deaf(
    tmp_path: Path, scripted_server: ScriptedServer, signum: int, code: int
) -> None:
    """Issue 23, defect 13: a check that blocks the event loop is cancelled within a second
    of the signal; the finished evals, their recordings and the partial report are kept."""
    scripted_server.add_rule("spin ok", contains="question 3")
    scripted_server.add_rule("ok")
    suite = slow_suite(tmp_path, scripted_server)
    report_path = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.cpu_bound_cli", "record", str(suite),
         "--concurrency", "1", "--json", str(report_path)],
        cwd=ROOT, env={**env, "OPENAI_API_KEY": "sk-test-0000"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    wait_for_requests(scripted_server, 4, process)
    assert process.stderr is not None
    while "spinning" not in process.stderr.readline():  # the check of question 3 is busy
        assert process.poll() is None
    started = time.monotonic()
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)  # the check alone would spin 120 s
    assert time.monotonic() - started < 1.0  # issue 32: every phase within a second
    assert process.returncode == code, stdout + stderr
    assert "Traceback" not in stdout + stderr

    report = json.loads(report_path.read_text(encoding="utf-8"))
    statuses = [(e["status"], e.get("reason")) for e in report["suites"][0]["evals"]]
    assert statuses[:3] == [("pass", None)] * 3
    assert statuses[3:] == [("error", "interrupted")] * (EVALS - 3)
    assert len(scripted_server.requests) == 4
    assert len(CassetteTransport(cassette_path_for(suite), "replay")) == 4  # question 3 too


def _spin(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def _signalled_run(coroutine: Callable[[], Coroutine[Any, Any, str]]) -> str:
    """Run `coroutine` under `interruptible()`, with SIGTERM sent to this process at 0.3 s."""
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        with interruptible():
            timer.start()
            return asyncio.run(coroutine())
    finally:
        timer.cancel()
        STOP.signal = None  # this process goes on running tests


def test_the_watchdog_cancels_guarded_work_that_keeps_the_loop_busy() -> None:
    async def busy() -> str:
        _spin(30)
        return "finished"

    async def main() -> str:
        return await STOP.guard(busy, lambda: "interrupted")

    assert _signalled_run(main) == "interrupted"  # not "finished", 30 s later


def test_work_outside_a_guarded_item_is_never_cancelled_by_the_watchdog() -> None:
    async def main() -> str:
        _spin(1.5)  # the run's own bookkeeping, say: busy, but not an item
        return "finished"

    assert _signalled_run(main) == "finished"
