"""Issue 46, item 1: an app process that leaves its group and session does not outlive
the run, and finds no token while it runs.

A fork's app (`tests/support/target_apps/escaping_app.py`) forks twice and `setsid()`s
on its first turn; the escaped process polls every `/proc/<pid>/environ` and `cmdline`
for the job's planted credentials and writes to the step's files when it learns their
paths. When `turncheck action` exits, it is gone, and it found nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_app_fork_safety import digests, eval_result, planted
from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.target_helpers import APPS
from turncheck.targets.process import hide_own_environment

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="a child subreaper and /proc are Linux's")


@pytest.fixture(autouse=True)
def runner_out_of_reach() -> None:
    """pytest plays the runner, out of a job's reach (see test_app_fork_safety)."""
    hide_own_environment()


def escaping_suite(report: Path, credentials: dict[str, str]) -> str:
    return f"""\
metadata:
  name: escape
  target:
    start: {sys.executable} escaping_app.py {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
    env: {{HUNT_DIGESTS: "{digests(credentials)}", HUNT_REPORT: "{report}",
           HUNT_SECONDS: "20"}}
evals:
  - name: escapes
    prompt: Look around.
    checks:
      - match: "clean"
"""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def findings_of(report: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in report.read_text().splitlines()]


UNPRIVILEGED = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
"""turncheck run as `nobody`, as on a runner whose job is not root."""


def _folder_for(user: str, tmp_path: Path) -> Path:
    if user == "as-started":
        return tmp_path
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running turncheck as another user needs root and setpriv")
    import subprocess

    reachable = subprocess.run([*UNPRIVILEGED, "/bin/sh", "-c", '"$0" -c pass',
                                sys.executable], capture_output=True, check=False)
    if reachable.returncode != 0:
        pytest.skip(f"nobody cannot run {sys.executable} here")
    folder = Path(tempfile.mkdtemp(prefix="turncheck-escape-", dir="/tmp"))
    folder.chmod(0o755)
    return folder


def _hand_to_nobody(folder: Path) -> None:
    """The runner's folder is nobody's; the checkout stays the test's (it reads the
    commits), open to all, and git trusts it through nobody's `$HOME/.gitconfig`."""
    runner = folder / "runner"
    runner.mkdir()
    (runner / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    for name in ("output.txt", "summary.md"):  # the harness writes them as they are
        (runner / name).write_text("")
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o777 if path.is_dir() else 0o666)
    for path in [runner, *runner.iterdir()]:
        os.chown(path, 65534, 65534)


@pytest.mark.parametrize("user", ["as-started", "unprivileged"])
def test_an_app_that_double_forks_and_setsids_is_gone_when_turncheck_exits(
        tmp_path: Path, github_fake: FakeGitHub, user: str) -> None:
    folder = _folder_for(user, tmp_path)
    try:
        _escape_during_a_pull_request_run(folder, github_fake, user)
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder, ignore_errors=True)


def _escape_during_a_pull_request_run(folder: Path, github_fake: FakeGitHub,
                                      user: str) -> None:
    credentials = planted()
    report = folder / "findings.jsonl"
    repo = GitRepo(folder / "workspace")
    repo.write("README.md", "widgets")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    for name in ("escaping_app.py", "token_hunter.py"):
        repo.write(f"bot/{name}", (APPS / name).read_text())
    repo.write("bot/escape.eval.yaml", escaping_suite(report, credentials))
    head = repo.commit("a fork adds an app")
    (folder / "tmp").mkdir()
    if user == "unprivileged":
        _hand_to_nobody(folder)
    github_fake.writes_forbidden = True
    run = run_pull_request(repo, folder / "runner", github_fake, base, head,
                           {"github-token": credentials["INPUT_GITHUB-TOKEN"]}, fork=True,
                           extra_env={**credentials, "TMPDIR": str(folder / "tmp")},
                           wrapper=UNPRIVILEGED if user == "unprivileged" else ())
    assert Path(f"{report}.pid").exists(), run.stdout + run.stderr
    hunter = int(Path(f"{report}.pid").read_text())
    try:
        assert not running(hunter), "the escaped process outlived turncheck"
        findings = findings_of(report)
        assert [f for f in findings if "found" in f or "wrote" in f] == []
        assert findings[0]["own_step_files"] == []
        assert not any(f.get("finished") for f in findings)  # it was ended, not done
        assert "escaped=yes" not in (folder / "runner" / "output.txt").read_text()
        assert "escaped=yes" not in run.summary
        assert "Traceback" not in run.stderr, run.stderr
        assert "Event loop is closed" not in run.stderr, run.stderr
        assert eval_result(run)["status"] == "pass", run.stdout + run.stderr
    finally:
        if running(hunter):
            os.kill(hunter, 9)


def test_an_escaped_process_is_gone_when_turncheck_is_interrupted_mid_turn(
        tmp_path: Path) -> None:
    """SIGTERM while the app's first turn is in flight: turncheck exits, and the process
    the app moved out of its session is gone with it."""
    import signal
    import subprocess
    import time

    from tests.support.action_harness import TURNCHECK

    credentials = planted()
    report = tmp_path / "findings.jsonl"
    folder = tmp_path / "bot"
    folder.mkdir()
    for name in ("escaping_app.py", "token_hunter.py"):
        (folder / name).write_text((APPS / name).read_text())
    suite = escaping_suite(report, credentials).replace(
        'HUNT_SECONDS: "20"', 'HUNT_SECONDS: "20", HANG_SECONDS: "60"')
    (folder / "escape.eval.yaml").write_text(suite)
    run = subprocess.Popen([str(TURNCHECK), "run", "escape.eval.yaml"], cwd=folder,
                           env={**os.environ, **credentials}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    pid_file = Path(f"{report}.pid")
    hunter = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                pid_file.exists() and pid_file.read_text().strip()):
            time.sleep(0.05)
        hunter = int(pid_file.read_text())
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=60)
        assert run.returncode == 143, stderr
        assert not running(hunter), "the escaped process outlived the interrupted run"
        assert [f for f in findings_of(report) if "found" in f] == []
        assert "Traceback" not in stderr and "Event loop is closed" not in stderr, stderr
    finally:
        if run.poll() is None:
            run.kill()
        if hunter and running(hunter):
            os.kill(hunter, 9)
