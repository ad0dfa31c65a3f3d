"""Every workflow `turncheck init` writes (and every example workflow) bounds each job
with `timeout-minutes` (issue 32): a forged fork report must not hold the trusted poster,
which has a write token, for GitHub's default six hours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def jobs_without_timeout(workflow: dict[str, Any]) -> list[str]:
    return [name for name, job in workflow["jobs"].items()
            if not isinstance(job.get("timeout-minutes"), int)]


def test_every_job_init_writes_has_a_timeout(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run([sys.executable, "-m", "turncheck", "init"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    workflows = sorted((tmp_path / ".github" / "workflows").glob("*.yml"))
    assert len(workflows) == 3
    for path in workflows:
        assert jobs_without_timeout(yaml.safe_load(path.read_text())) == [], path.name
    poster = yaml.safe_load((tmp_path / ".github/workflows/turncheck-fork-comment.yml")
                            .read_text())
    assert poster["jobs"]["post"]["timeout-minutes"] <= 15


def test_every_example_workflow_job_has_a_timeout() -> None:
    for path in sorted((ROOT / ".github" / "workflows").glob("turncheck-*.yml")):
        assert jobs_without_timeout(yaml.safe_load(path.read_text())) == [], path.name
