"""Issue 44, item 8: the smaller things a new app team meets in its first week."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from turncheck.render.app_calls import calls_in_turns


def turncheck(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_an_app_that_exits_before_ready_shows_its_last_output(tmp_path: Path) -> None:
    """Its exit used to be read before its output was drained: "it wrote nothing"
    while its traceback was on the way (here written by a child a moment later)."""
    start = "(sleep 0.3; echo 'Traceback: ModuleNotFoundError: fastapi' >&2) & exit 3"
    (tmp_path / "bot.eval.yaml").write_text(f"""\
metadata:
  name: bot
  model: gpt-4o-mini
  target:
    start: "{start}"
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
evals:
  - name: a
    prompt: hi
    checks:
      - match: "*x*"
""")
    ran = turncheck(tmp_path, "run", "bot.eval.yaml")
    assert "exited with code 3 before it was ready; its last output: Traceback: " \
        "ModuleNotFoundError: fastapi" in ran.stdout, ran.stdout + ran.stderr
    assert "it wrote nothing" not in ran.stdout


def test_one_turn_is_one_turn() -> None:
    assert calls_in_turns(0, 1) == "0 in 1 turn (0 per turn)"
    assert calls_in_turns(8, 5) == "8 in 5 turns (1.6 per turn)"
