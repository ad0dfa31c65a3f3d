"""An app started as `python app.py` by a turncheck called from a virtualenv that was not
activated (`.venv/bin/turncheck run examples/`): the app finds the interpreter running
turncheck, whose packages it needs, at the end of its `PATH`; an interpreter already on
the user's `PATH` still comes first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.action_harness import TURNCHECK
from turncheck.targets.process import app_environment, with_own_interpreter

ROOT = Path(__file__).resolve().parents[2]
OWN = str(Path(sys.executable).parent)


def test_the_app_path_ends_with_turncheck_s_interpreter_and_keeps_the_users_first() -> None:
    assert with_own_interpreter("/opt/app/bin:/usr/bin") == f"/opt/app/bin:/usr/bin:{OWN}"
    assert with_own_interpreter("") == f"{os.defpath}{os.pathsep}{OWN}"
    already = f"/opt/app/bin{os.pathsep}{OWN}"
    assert with_own_interpreter(already) == already
    env = app_environment({"PATH": "/opt/app/bin"}, None, {}, None)
    assert env["PATH"].split(os.pathsep) == ["/opt/app/bin", OWN]


def test_the_support_bot_example_runs_from_a_virtualenv_that_was_not_activated(
        tmp_path: Path) -> None:
    # A PATH holding no interpreter: `python app.py` resolves only through turncheck's own.
    empty = tmp_path / "bin"
    empty.mkdir()
    ran = subprocess.run([str(TURNCHECK), "run", "examples/support-bot"], cwd=ROOT,
                         env={"HOME": str(tmp_path), "PATH": str(empty)},
                         capture_output=True, text=True, timeout=300, check=False)
    assert "python: not found" not in ran.stdout + ran.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Exit 0: nothing failed (4 evals)" in ran.stdout
