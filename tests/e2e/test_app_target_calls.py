"""A pull request that makes the app call the model twice per turn: `turncheck diff` says
the suite's tokens and cost are the app's own model calls, shows the calls per turn on
each side and the cost delta, in the comment and on the console; `turncheck run` shows
the calls per turn (docs/targets.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.engine_helpers import FAKE_KEY, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import (
    THREE_TURNS,
    app_change_repo,
    http_target,
    memory_reply,
    turncheck_in,
    upstream_env,
)

ONE_CALL = 'os.environ.get("APP_CALLS", "1")'
SUITE = f"""\
metadata:
  name: support-bot
  model: gpt-4o-mini
  target:
    start: {sys.executable} app.py {{port}}
    ready: /health
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
      reply: reply
    session: client
    stateful: true
""" + THREE_TURNS


def test_an_app_calling_the_model_twice_per_turn_shows_doubled_calls_and_their_cost(
        tmp_path: Path) -> None:
    repo, env, base, _ = app_change_repo(
        tmp_path, SUITE, lambda code: code.replace(ONE_CALL, ONE_CALL.replace('"1"', '"2"')),
        memory_reply, head_passes=True)
    diffed = turncheck_in(repo, env, "diff", base, "--json", str(tmp_path / "diff.json"),
                        "--markdown", str(tmp_path / "comment.md"))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    comparison = json.loads((tmp_path / "diff.json").read_text())
    [suite] = comparison["suites"]
    assert suite["app_calls"] == {"base_calls": 3, "base_turns": 3, "head_calls": 6,
                                  "head_turns": 3}
    assert comparison["totals"]["delta"]["cost_usd"] > 0
    comment = (tmp_path / "comment.md").read_text()
    shown = comment.replace("\\", "")  # Markdown escapes
    assert "the app's own model calls" in shown
    assert "**support-bot**: app model calls: 3 → 6 (1 → 2 per turn)" in shown
    assert "the app made 6 model calls instead of 3" in shown
    assert re.search(r"\| Model \| \$[\d.]+ \| \$[\d.]+ \| \+\$[\d.]+ \| \+[\d.]+% \|", comment)
    assert "the app's own model calls" in diffed.stdout
    assert "support-bot: app model calls: 3 → 6 (1 → 2 per turn)" in diffed.stdout


def test_the_run_console_shows_the_apps_model_calls_per_turn(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({"APP_CALLS": "2"}) + THREE_TURNS,
                        "bot.eval.yaml")
    with ScriptedServer(default_reply=memory_reply) as server:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
               "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
               **upstream_env(server.base_url), "OPENAI_API_KEY": FAKE_KEY}
        recorded = subprocess.run([sys.executable, "-m", "turncheck", "record", str(suite)],
                                  env=env, capture_output=True, text=True, timeout=120,
                                  check=False)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "App model calls: support-bot: 6 in 3 turns (2 per turn)" in recorded.stdout
    assert "the app's own model calls" in recorded.stdout
