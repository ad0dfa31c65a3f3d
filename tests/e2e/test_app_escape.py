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


def _folder_for(user: str, tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """The run's folder and the command prefix that runs turncheck as `user`."""
    if user == "as-started":
        return tmp_path, ()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running turncheck as another user needs root and setpriv")
    wrapper = _unprivileged_wrapper()
    folder = Path(tempfile.mkdtemp(prefix="turncheck-escape-", dir="/tmp"))
    folder.chmod(0o755)
    return folder, wrapper


def _nobody_runs(wrapper: tuple[str, ...]) -> bool:
    import subprocess

    # Through a shell, as an app is started: setpriv itself still holds root's
    # capabilities when it starts a program, the app's shell does not.
    done = subprocess.run([*wrapper, "/bin/sh", "-c", '"$0" -c "import turncheck"',
                           sys.executable], capture_output=True, check=False)
    return done.returncode == 0


def _unprivileged_wrapper() -> tuple[str, ...]:
    """`setpriv` to nobody; where the interpreter lies under a folder nobody cannot enter
    (pyenv's /root/.pyenv on this machine), first a private mount namespace in which that
    folder is an empty tmpfs holding only the interpreter's tree: nobody runs the same
    Python and sees nothing else of root's home."""
    if _nobody_runs(UNPRIVILEGED):
        return UNPRIVILEGED
    remounts = _remounts_for(Path(sys.base_prefix), Path(sys.prefix))
    if not remounts or shutil.which("unshare") is None:
        pytest.skip(f"nobody cannot run {sys.executable} here")
    wrapper = ("unshare", "--mount", "--propagation", "private", "/bin/sh", "-ec",
               f'{remounts}\nexec "$@"', "wrapper", *UNPRIVILEGED)
    if not _nobody_runs(wrapper):
        pytest.skip(f"nobody cannot run {sys.executable} here, even in a mount namespace")
    return wrapper


def _remounts_for(*paths: Path) -> str:
    """Shell lines that make each path reachable by nobody: the first folder on its way
    that others cannot enter becomes a tmpfs into which the path's subtree is bound back."""
    kept: dict[Path, Path] = {}
    for path in (p.resolve() for p in paths):
        closed = next((folder for folder in reversed(path.parents)
                       if folder != Path("/") and not folder.stat().st_mode & 0o001), None)
        if closed is not None:
            kept[closed / path.relative_to(closed).parts[0]] = closed
    stashes = {subtree: f"stash{number}" for number, subtree in enumerate(kept)}
    return "\n".join(
        [f"{stash}=$(mktemp -d) && mount --bind '{subtree}' \"${stash}\""
         for subtree, stash in stashes.items()]
        + [f"mount -t tmpfs -o mode=755 tmpfs '{closed}'" for closed in set(kept.values())]
        + [f"mkdir -p '{subtree}' && mount --move \"${stash}\" '{subtree}' && rmdir \"${stash}\""
           for subtree, stash in stashes.items()])


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
    folder, wrapper = _folder_for(user, tmp_path)
    try:
        _escape_during_a_pull_request_run(folder, github_fake, wrapper)
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder, ignore_errors=True)


def _escape_during_a_pull_request_run(folder: Path, github_fake: FakeGitHub,
                                      wrapper: tuple[str, ...]) -> None:
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
    if wrapper:
        _hand_to_nobody(folder)
    github_fake.writes_forbidden = True
    run = run_pull_request(repo, folder / "runner", github_fake, base, head,
                           {"github-token": credentials["INPUT_GITHUB-TOKEN"]}, fork=True,
                           extra_env={**credentials, "TMPDIR": str(folder / "tmp")},
                           wrapper=wrapper)
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
