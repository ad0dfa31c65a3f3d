"""Issue 44, item 4: one eval's error never breaks the next eval's connection to the app.

A FastAPI app under uvicorn answers an unhandled exception (its model call missed the
recording) with HTTP 500 and then closes the connection. turncheck used to send the next
eval's request on that pooled connection, which the app reset: the next eval errored
"cannot reach the app ... Connection reset by peer". Each turn now has its own
connection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import APPS

EVALS = 5


def suite() -> str:
    head = f"""\
metadata:
  name: bot
  model: gpt-4o-mini
  target:
    start: {sys.executable} {APPS / 'fastapi_app.py'} {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
evals:
"""
    return head + "".join(f'  - name: e{i}\n    prompt: Question {i}\n    checks:\n'
                          '      - match: "*Answer*"\n' for i in range(1, EVALS + 1))


def turncheck(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args, str(folder)],
                          cwd=folder.parent, env=env, capture_output=True, text=True,
                          timeout=180, check=False)


def test_after_an_evals_app_error_the_next_evals_pass(tmp_path: Path) -> None:
    folder = tmp_path / "evals"
    folder.mkdir()
    path = folder / "bot.eval.yaml"
    path.write_text(suite())
    with ScriptedServer(default_reply="Answer!") as server:
        env = {**{k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")},
               "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-1"}
        recorded = turncheck(folder, env, "record")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    # The first eval's question changes: its model call has no recording now.
    path.write_text(suite().replace("Question 1", "Question one"))
    ran = turncheck(folder, env, "run", "--concurrency", "1")
    assert "no recording for POST" in ran.stdout
    assert "Connection reset" not in ran.stdout and "ServerDisconnected" not in ran.stdout
    for number in range(2, EVALS + 1):
        assert f"pass  bot › e{number}" in ran.stderr, ran.stdout + ran.stderr
    assert "1 eval errored" in ran.stdout, ran.stdout
