"""Issue 44, item 6: sessions and headers.

`session: {from: "header:X-Session-Id"}` sends the id back in the same header when no
template places it (the app then keeps one session per conversation); validation warns
about a session the app will never see; an app whose model calls name a turn that is not
being answered gets the proxy's own explanation, not "the app answered HTTP 500"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import APPS, SUPPORT_APP, memory_reply

HEADER_SUITE = f"""\
metadata:
  name: sessions
  model: gpt-4o-mini
  target:
    start: {sys.executable} {APPS / 'header_session_app.py'} {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
    session: @SESSION@
evals:
  - name: one session
    turns:
      - prompt: Hello
        checks:
          - match: "*turn 1 of session*"
      - prompt: Again
        checks:
          - match: "*turn 2 of session*"
      - prompt: And again
        checks:
          - match: "*turn 3 of session*"
"""


def turncheck(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def clean_env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))},
            **extra}


def test_a_header_session_goes_back_in_its_header(tmp_path: Path) -> None:
    suite = tmp_path / "sessions.eval.yaml"
    suite.write_text(HEADER_SUITE.replace("@SESSION@", '{from: "header:X-Session-Id"}'))
    checked = turncheck(tmp_path, clean_env(), "validate", suite.name)
    assert "0 warnings" in checked.stderr, checked.stdout + checked.stderr
    ran = turncheck(tmp_path, clean_env(), "run", suite.name)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "turn 3 of session" in ran.stdout


def test_validation_warns_about_a_session_the_app_never_sees(tmp_path: Path) -> None:
    suite = tmp_path / "sessions.eval.yaml"
    suite.write_text(HEADER_SUITE.replace("@SESSION@", "client"))
    checked = turncheck(tmp_path, clean_env(), "validate", suite.name)
    output = checked.stdout + checked.stderr
    assert 'sessions.eval.yaml:8:14: warning: session: "client" gives each conversation an ' \
        "id, but no template of http (url, headers, body) places {{ session_id }}: the app " \
        "never sees it" in output, output
    suite.write_text(HEADER_SUITE.replace("@SESSION@", '{from: "json:session"}'))
    output = turncheck(tmp_path, clean_env(), "validate", suite.name).stdout
    assert "it is never sent back, so the app opens a new session each turn" in output, output


def test_an_app_that_names_no_open_turn_in_its_header_gets_the_proxys_reason(
        tmp_path: Path) -> None:
    suite = tmp_path / "bot.eval.yaml"
    suite.write_text(f"""\
metadata:
  name: bot
  model: gpt-4o-mini
  target:
    start: {sys.executable} {SUPPORT_APP} {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
    env: {{APP_TURN_HEADER: turn-999}}
evals:
  - name: hello
    prompt: Hello
    checks:
      - match: "*Noted*"
""")
    with ScriptedServer(default_reply=memory_reply) as server:
        ran = turncheck(tmp_path, clean_env(OPENAI_BASE_URL=server.base_url,
                                            OPENAI_API_KEY="sk-test-1"), "record", suite.name)
    assert ran.returncode != 0
    assert "turncheck proxy: X-Turncheck-Turn 'turn-999' names no turn being answered now" \
        in ran.stdout, ran.stdout
    assert "(then the app answered HTTP 500" in ran.stdout
