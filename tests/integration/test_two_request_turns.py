"""Issue 44, item 7: an app that answers in two requests (OpenAI's quickstart chat app:
POST /chat, then GET /stream as server-sent events of plain text) is an http target with
`then:`; its streamed reply is joined into the turn's answer, the first byte's time kept,
and the second request's templates see the first reply (`first_reply`): the app streams
only the message whose id its first reply handed out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_server import Json, ScriptedServer, _content_text, conversation_of
from tests.support.target_helpers import APPS

SUITE = f"""\
metadata:
  name: quickstart
  model: gpt-3.5-turbo
  target:
    start: {sys.executable} {APPS / 'quickstart_app.py'} {{port}}
    ready: /
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}"}}
      then:
        path: /stream?id={{{{ first_reply.id }}}}
        method: GET
    stateful: true
evals:
  - name: remembers the name
    turns:
      - prompt: Hi, I am Ada.
        checks:
          - match: "*Nice to meet you, Ada*"
      - prompt: What is my name?
        checks:
          - match: "*Your name is Ada*"
"""


def name_reply(body: Json) -> str:
    users = [_content_text(m.get("content")) for m in conversation_of(body)
             if m.get("role") == "user"]
    if "my name" in users[-1]:
        return "Your name is Ada." if any("Ada" in u for u in users) else "I do not know."
    return "Nice to meet you, Ada! How can I help?"


def turncheck(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_the_quickstart_app_passes_a_two_turn_eval_as_an_http_target(tmp_path: Path) -> None:
    (tmp_path / "quickstart.eval.yaml").write_text(SUITE)
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    with ScriptedServer(default_reply=name_reply) as server:
        recorded = turncheck(tmp_path, {**clean, "OPENAI_BASE_URL": server.base_url,
                                        "OPENAI_API_KEY": "sk-test-1"}, "record", ".")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert [r.json.get("stream") for r in server.requests] == [True, True]
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    replayed = turncheck(tmp_path, clean, "run", ".", "--json", str(tmp_path / "run.json"))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    [suite] = json.loads((tmp_path / "run.json").read_text())["suites"]
    [result] = suite["evals"]
    assert [t["response"] for t in result["turns"]] == [
        "Nice to meet you, Ada! How can I help?", "Your name is Ada."]
    assert all(t["first_token_ms"] is not None for t in result["turns"])


def test_a_second_request_without_the_first_replys_id_is_refused_by_the_app(
        tmp_path: Path) -> None:
    """The app really needs the id: the same suite without `first_reply` errors."""
    (tmp_path / "quickstart.eval.yaml").write_text(
        SUITE.replace("?id={{ first_reply.id }}", ""))
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    ran = turncheck(tmp_path, clean, "run", ".")
    assert ran.returncode != 0
    assert "no message '' to answer: POST /chat first" in ran.stdout + ran.stderr


def test_validate_refuses_a_then_of_a_then(tmp_path: Path) -> None:
    suite = tmp_path / "q.eval.yaml"
    suite.write_text(SUITE.replace("        method: GET\n",
                                   "        method: GET\n        then: {path: /x}\n"))
    checked = turncheck(tmp_path, dict(os.environ), "validate", suite.name)
    assert checked.returncode != 0
    assert "http.then may not have a then of its own" in checked.stdout + checked.stderr
