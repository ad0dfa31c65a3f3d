"""Issue 44, item 1: the workflow `turncheck init --target ...` writes installs the
turncheck its action reference names. Its install step is the action's `setup` action
(`turncheck/turncheck/setup@<ref>`), which installs from the action's own files with
requirements.lock's hashes; no step names a release of the package index.

Run as the runner would: the repository's files are the action's checkout (what GitHub
downloads for `uses: owner/repo/setup@ref`), the composite step's `run:` runs under
bash -eo pipefail with `github.action_path` set, in a fresh virtual environment standing
for actions/setup-python's Python. The locked wheels come from a wheelhouse downloaded
once (with the lock's hashes) so the test stays quick; pip checks every hash again."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.workflow_lint import lint

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
EXPRESSION = re.compile(r"\$\{\{\s*github\.action_path\s*\}\}")


def action_checkout(tmp_path: Path) -> Path:
    """The files GitHub downloads for the action's reference: every tracked (and new,
    not ignored) file of this repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    checkout = tmp_path / "_actions" / "turncheck" / "turncheck" / "ref"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, checkout / name)
    return checkout


def wheelhouse(config: pytest.Config, tmp_path: Path) -> Path:
    """The lock's wheels, downloaded once per lock into pytest's cache (each time
    without it); pip verifies the hashes."""
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    cache: pytest.Cache | None = getattr(config, "cache", None)
    folder = cache.mkdir(f"lock-wheels-{digest}") if cache else tmp_path / "wheels"
    if not (folder / "complete").exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                        "--require-hashes", "-r", str(LOCK), "-d", str(folder)],
                       check=True, timeout=600)
        (folder / "complete").write_text("")
    return folder


def fresh_python(tmp_path: Path) -> dict[str, str]:
    """A new virtual environment first on PATH, as actions/setup-python leaves it; no
    PYTHONPATH, so nothing of this checkout's src/ can stand in for the install."""
    venv = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def composite_steps(checkout: Path) -> list[dict[str, Any]]:
    action = yaml.safe_load((checkout / "setup" / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return list(action["runs"]["steps"])


def run_step(step: dict[str, Any], action_path: Path, env: dict[str, str],
             cwd: Path) -> subprocess.CompletedProcess[str]:
    """One composite step as the runner runs it (`shell: bash` is
    `bash --noprofile --norc -eo pipefail {0}`)."""
    assert step["shell"] == "bash"
    step_env = {name: EXPRESSION.sub(str(action_path), str(value))
                for name, value in step.get("env", {}).items()}
    assert "${{" not in step["run"], "the script itself names no expression"
    script = cwd / "step.sh"
    script.write_text(step["run"])
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env={**env, **step_env,
                                        "GITHUB_ACTION_PATH": str(action_path)},
                          capture_output=True, text=True, timeout=600, check=False)


def init_target_workflow(repo: Path, target: str) -> dict[str, Any]:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = subprocess.run([sys.executable, "-m", "turncheck", "init", "--target", target,
                           "--action-ref", "0123456789abcdef0123456789abcdef01234567"],
                          cwd=repo, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(yaml.safe_load((repo / ".github/workflows/turncheck.yml").read_text()))


@pytest.mark.parametrize("target", ["http", "python", "command"])
def test_the_app_workflow_installs_turncheck_with_the_actions_setup_step(
        tmp_path: Path, target: str) -> None:
    workflow = init_target_workflow(tmp_path, target)
    linted = lint(sorted((tmp_path / ".github/workflows").glob("*.yml")), tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    for job in ("evals", "baseline"):
        steps = workflow["jobs"][job]["steps"]
        uses = [str(step.get("uses", "")) for step in steps]
        setup = uses.index("turncheck/turncheck/setup@0123456789abcdef0123456789abcdef01234567")
        assert uses.index("actions/setup-python@v6") < setup
        runs = "\n".join(str(step.get("run", "")) for step in steps)
        assert "turncheck==" not in runs and "pip install turncheck" not in runs


def test_the_setup_actions_files_pass_actionlint(tmp_path: Path) -> None:
    """A workflow using the setup action from this checkout (`./setup`) lints clean,
    which reads setup/action.yml."""
    shutil.copytree(ROOT / "setup", tmp_path / "setup")
    workflow = tmp_path / ".github" / "workflows" / "use-setup.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                        "    timeout-minutes: 10\n    steps:\n"
                        "      - uses: actions/setup-python@v6\n        with:\n"
                        "          python-version: '3.12'\n      - uses: ./setup\n")
    linted = lint([workflow], tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_the_setup_step_installs_the_actions_turncheck_that_runs_a_suite(
        tmp_path: Path, pytestconfig: pytest.Config) -> None:
    wheels = wheelhouse(pytestconfig, tmp_path)
    checkout = action_checkout(tmp_path)
    env = fresh_python(tmp_path)
    # Only the lock's wheels are reachable: a step naming anything else fails here.
    # (No bytecode compiling: scipy's would take most of the test's time.)
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels), PIP_NO_COMPILE="1")
    workspace = tmp_path / "workspace"
    init_target_workflow(workspace, "http")  # its starter suite: an app, with its cassette
    for step in composite_steps(checkout):
        done = run_step(step, checkout / "setup", env, workspace)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    where = subprocess.run(["python", "-c", "import turncheck; print(turncheck.__file__)"],
                           env=env, cwd=workspace, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert Path(where).is_relative_to(tmp_path / "python"), where
    keyless = {name: value for name, value in env.items() if not name.endswith("_API_KEY")}
    ran = subprocess.run(["turncheck", "run", "evals"], env=keyless, cwd=workspace,
                         capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "starter (gpt-4o-mini via http target, replay)" in ran.stdout
    assert "App model calls: starter: 2 in 2 turns" in ran.stdout
