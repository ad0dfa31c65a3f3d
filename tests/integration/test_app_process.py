"""Starting and stopping the app (docs/targets.md): a start command that hangs, an app that
never becomes ready, one that crashes mid-conversation, one that answers a gigabyte, and
turncheck stopped by SIGTERM: each a clear error of the evals it affects, the rest still
run, and no process of the app's group is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import (
    MEMORY_APP,
    THREE_TURNS,
    group_alive,
    http_target,
    memory_reply,
    upstream_env,
)
from turncheck.report.results import Status
from turncheck.report.run import Report

TWO_EVALS = THREE_TURNS + """\
  - name: second
    prompt: Hello
    checks:
      - match: "*Noted*"
"""


def _other_suite(folder: Path) -> Path:
    """A suite with a healthy (python) target, run beside the broken one."""
    (folder / "memory_app.py").write_text(MEMORY_APP.read_text())
    metadata = ("metadata:\n  name: healthy\n  target:\n"
                "    python: memory_app:answer_async\n    session: client\n")
    evals = THREE_TURNS.replace("name: remembers", "name: healthy")
    return write_suite(folder, metadata + evals, "healthy.eval.yaml")


def _run_broken(tmp_path: Path, metadata: str) -> Report:
    broken = write_suite(tmp_path, metadata + TWO_EVALS)
    with ScriptedServer(default_reply=memory_reply) as server:
        return run_paths([broken, _other_suite(tmp_path)], server, "record",
                         env=upstream_env(server.base_url))


def _errors(report: Report) -> dict[str, str | None]:
    return {e.name: e.error for e in report.suites[0].evals}


def _healthy_passed(report: Report) -> bool:
    return [e.status for e in report.suites[1].evals] == [Status.PASS]


def test_a_start_command_that_hangs_is_an_error_of_its_evals(tmp_path: Path) -> None:
    pid_file = tmp_path / "group"
    metadata = http_target({}, ready_timeout=1).replace(
        f"start: {sys.executable}", f"start: echo $$ > {pid_file}; sleep 300 & wait; true")
    started = time.monotonic()
    report = _run_broken(tmp_path, metadata)

    errors = _errors(report)
    assert set(errors) == {"remembers", "second"}
    for error in errors.values():
        assert error is not None
        assert "did not answer http://127.0.0.1:" in error and "/health within 1s" in error
    assert _healthy_passed(report)
    assert not group_alive(pid_file)
    assert time.monotonic() - started < 60


def test_an_app_that_never_becomes_ready_is_an_error_and_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "group"
    report = _run_broken(tmp_path, http_target(
        {"APP_UNHEALTHY": "1", "APP_PID_FILE": str(pid_file)}, ready_timeout=2))
    for error in _errors(report).values():
        assert error is not None and "/health within 2s" in error
    assert _healthy_passed(report)
    assert not group_alive(pid_file)


def test_an_app_that_crashes_mid_conversation_names_the_crash(tmp_path: Path) -> None:
    pid_file = tmp_path / "group"
    metadata = http_target({"APP_CRASH_ON_TURN": "2", "APP_PID_FILE": str(pid_file)})
    one_at_a_time = metadata.replace("  model: gpt-4o-mini\n",
                                     "  model: gpt-4o-mini\n  threads: 1\n")
    report = _run_broken(tmp_path, one_at_a_time)

    remembers = report.suites[0].evals[0]
    assert remembers.status == Status.ERROR
    assert remembers.error is not None
    assert "exited with code 3 during this turn" in remembers.error
    assert "its last output: app: crashing on purpose" in remembers.error
    assert [t.response for t in remembers.turns] == ["Noted."]  # the partial report is kept
    second = report.suites[0].evals[1]
    assert second.error is not None and "exited with code 3" in second.error
    assert _healthy_passed(report)
    assert not group_alive(pid_file)


def test_an_app_that_answers_a_gigabyte_is_refused_quickly(tmp_path: Path) -> None:
    pid_file = tmp_path / "group"
    started = time.monotonic()
    report = _run_broken(tmp_path, http_target({"APP_HUGE": "1",
                                                "APP_PID_FILE": str(pid_file)}))
    for error in _errors(report).values():
        assert error is not None
        assert "the app's reply is larger than 16,777,216 bytes and was refused" in error
    assert _healthy_passed(report)
    assert not group_alive(pid_file)
    assert time.monotonic() - started < 60


def test_sigterm_stops_the_apps_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "group"
    suite = write_suite(tmp_path, http_target(
        {"APP_DELAY": "300", "APP_PID_FILE": str(pid_file)}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        env = {**os.environ, **upstream_env(server.base_url), "OPENAI_API_KEY": "sk-test-123"}
        run = subprocess.Popen([sys.executable, "-m", "turncheck", "record", str(suite)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pid_file.exists()
            time.sleep(1.0)  # the first turn is now waiting on the app
            assert group_alive(pid_file)
            run.send_signal(signal.SIGTERM)
            output, _ = run.communicate(timeout=60)
        finally:
            run.kill()
    assert run.returncode == 143, output.decode()
    assert not group_alive(pid_file)
