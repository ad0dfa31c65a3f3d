"""Every phase stops within a second of SIGTERM and keeps what it finished (issue 32,
item 8): a max-size suite signalled while loading took 29 s to exit, and rendering
ignored the signal (154 s in the action)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.test_action_trust import pr_repo
from tests.support.action_harness import PR, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.scripted_server import ScriptedServer

__all__ = ["pr_repo"]  # the fixture

ROOT = Path(__file__).resolve().parents[2]
EXIT_SECONDS = 1.0


def start(tmp_path: Path, *args: str, slow_render: bool = False) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env["OPENAI_API_KEY"] = "sk-test-0000"
    if slow_render:
        env["TURNCHECK_TEST_SLOW_RENDER"] = "1"
    return subprocess.Popen([sys.executable, "-m", "tests.support.slow_phase_cli", *args], cwd=ROOT,
                            env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_line(process: subprocess.Popen[str], text: str) -> None:
    assert process.stderr is not None
    while text not in process.stderr.readline():
        assert process.poll() is None, process.communicate()


def signal_and_time(process: subprocess.Popen[str]) -> tuple[float, str]:
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    return time.monotonic() - started, stdout + stderr


def suite_text(server: ScriptedServer, name: str, evals: int, padding: int = 0) -> str:
    lines = [f"  - {{prompt: 'question {i} {'x' * padding}', checks: [{{match: '*ok*'}}, "
             f"{{not_match: '*bad {i}*'}}]}}\n" for i in range(evals)]
    return (f"metadata: {{name: {name}, model: gpt-4o-mini, provider: openai, "
            f"base_url: '{server.base_url}'}}\nevals:\n" + "".join(lines))


def test_sigterm_while_loading_a_max_size_suite(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("ok")
    suites = tmp_path / "evals"
    suites.mkdir()
    (suites / "a_small.eval.yaml").write_text(suite_text(scripted_server, "small", 3))
    big = suite_text(scripted_server, "big", 36_000, padding=40)  # near the 5 MiB cap
    (suites / "b_big.eval.yaml").write_text(big)
    report_path = tmp_path / "report.json"
    process = start(tmp_path, "record", str(suites), "--json", str(report_path))
    wait_for_line(process, "loading b_big.eval.yaml")
    time.sleep(0.2)  # well inside the big file's loading (seconds)
    elapsed, out = signal_and_time(process)
    assert process.returncode == 143, out
    assert elapsed < EXIT_SECONDS, elapsed
    assert "Traceback" not in out and "interrupted by SIGTERM" in out
    assert scripted_server.requests == []  # nothing started
    report = json.loads(report_path.read_text(encoding="utf-8"))
    [small] = report["suites"]  # what finished loading, every eval interrupted
    assert [(e["status"], e["reason"]) for e in small["evals"]] == [("error", "interrupted")] * 3


def test_sigterm_while_rendering_keeps_the_report(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("ok")
    suite = tmp_path / "done.eval.yaml"
    suite.write_text(suite_text(scripted_server, "done", 4))
    report_path, junit, html = tmp_path / "report.json", tmp_path / "junit.xml", tmp_path / "r.html"
    process = start(tmp_path, "record", str(suite), "--json", str(report_path), "--junit",
                    str(junit), "--html", str(html), slow_render=True)
    wait_for_line(process, "rendering")
    elapsed, out = signal_and_time(process)  # rendering alone would compute for 120 s
    assert process.returncode == 143, out
    assert elapsed < EXIT_SECONDS, elapsed
    assert "Traceback" not in out
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert [e["status"] for e in report["suites"][0]["evals"]] == ["pass"] * 4
    assert junit.exists() and not html.exists()


def test_sigterm_while_the_action_renders_keeps_the_report_and_posts_nothing(
    tmp_path: Path, pr_repo: tuple[GitRepo, str, str], github_fake: FakeGitHub
) -> None:
    repo, base, head = pr_repo
    signalled = tmp_path / "signalled"
    run = run_pull_request(
        repo, tmp_path / "runner", github_fake, base, head,
        extra_env={"TURNCHECK_TEST_SLOW_RENDER": "1", "TURNCHECK_TEST_SIGNAL_FILE": str(signalled)},
        wrapper=(sys.executable, str(ROOT / "tests" / "support" / "slow_phase_cli.py")))
    elapsed = time.time() - float(signalled.read_text(encoding="utf-8"))
    assert run.returncode == 143, run.stdout + run.stderr
    assert elapsed < EXIT_SECONDS, elapsed  # rendering alone would compute for 120 s
    assert "Traceback" not in run.stdout + run.stderr
    assert run.report is not None and run.report["head"]["suites"]  # the report is kept
    assert github_fake.comments_on(PR) == []  # nothing half-rendered is posted
