"""Issue 34, item 5: `turncheck init --target http|python|command` writes a workflow that
runs turncheck as a step on the runner, next to the app (the action's `setup` step, then
`exec turncheck action`), actionlint-clean, every job bounded; and every workflow init
writes checks out without persisting a token where an app could read it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.workflow_lint import lint

WORKFLOW = ".github/workflows/turncheck.yml"


def init(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return subprocess.run([sys.executable, "-m", "turncheck", "init", *args], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)


def steps_of(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(workflow["jobs"][job]["steps"])


@pytest.mark.parametrize("target", ["http", "python", "command"])
def test_init_target_writes_a_runner_step_workflow_next_to_the_app(
        tmp_path: Path, target: str) -> None:
    done = init(tmp_path, "--target", target)
    assert done.returncode == 0, done.stderr
    linted = lint(sorted((tmp_path / ".github/workflows").glob("*.yml")), tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    workflow = yaml.safe_load((tmp_path / WORKFLOW).read_text())
    for job in ("evals", "baseline"):
        assert isinstance(workflow["jobs"][job]["timeout-minutes"], int)
        steps = steps_of(workflow, job)
        assert not any(str(s.get("uses", "")).startswith("turncheck/turncheck@") for s in steps)
        assert "turncheck/turncheck/setup@v1" in [s.get("uses") for s in steps]
        [step] = [s for s in steps if s.get("run") == "exec turncheck action"]
        assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
        [checkout] = [s for s in steps if str(s.get("uses", "")).startswith("actions/checkout")]
        assert checkout["with"]["persist-credentials"] is False
    assert steps_of(workflow, "baseline")[-2]["env"]["INPUT_FAIL-ON"] == "invalid"
    assert f"--target {target}" in (tmp_path / WORKFLOW).read_text()


def test_init_refuses_an_unknown_target(tmp_path: Path) -> None:
    done = init(tmp_path, "--target", "grpc")
    assert done.returncode == 2
    assert "invalid choice: 'grpc'" in done.stderr


def test_every_checkout_init_writes_persists_no_credentials(tmp_path: Path) -> None:
    """A token left in .git/config keeps an app target from starting (docs/action.md)."""
    assert init(tmp_path).returncode == 0
    for path in sorted((tmp_path / ".github/workflows").glob("*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/checkout"):
                    assert step.get("with", {}).get("persist-credentials") is False, path.name


def test_every_example_workflow_checkout_persists_no_credentials() -> None:
    examples = Path(__file__).resolve().parents[2] / ".github" / "workflows"
    for path in sorted(examples.glob("turncheck-*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/checkout"):
                    assert step.get("with", {}).get("persist-credentials") is False, path.name


def test_init_target_http_writes_a_starter_app_suite_that_replays_without_a_key(
        tmp_path: Path) -> None:
    """Issue 44, item 8: the starter has a `target:` (a stand-in app with its recorded
    model calls), and the advice records with the app's key, not OpenRouter's."""
    done = init(tmp_path, "--target", "http")
    assert done.returncode == 0, done.stderr
    assert "OPENROUTER" not in done.stdout
    assert "turncheck record evals/   with the key your app's provider needs" in done.stdout
    suite = yaml.safe_load((tmp_path / "evals/starter.eval.yaml").read_text())
    assert suite["metadata"]["target"]["http"]["path"] == "/chat"
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    ran = subprocess.run([sys.executable, "-m", "turncheck", "run", "evals"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "via http target, replay" in ran.stdout
    assert "App model calls: starter: 2 in 2 turns" in ran.stdout
