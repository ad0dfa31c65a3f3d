"""Issue 46, item 5: a lone surrogate in an app's reply is handled as in a model's answer
(replaced by U+FFFD), in every kind of target and in the action's python worker: the
next turn goes on, the report is written."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAST_RETRIES, run_paths, write_suite
from turncheck.report.results import Status

APP = '''\
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def answer(last_message):
    return "broken \\ud800 reply" if last_message == "first" else "fine"

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self._send(b"ok")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(json.dumps({"reply": answer(body["message"])}).encode())

    def _send(self, data):
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass

if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
elif __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(answer(json.loads(line)["last_message"])), flush=True)
'''
TARGETS = {
    "python": "    python: surrogate_app:answer",
    "python-worker": "    python: surrogate_app:answer",
    "command": f"    command: [{sys.executable}, surrogate_app.py]",
    "http": f"""\
    start: {sys.executable} surrogate_app.py serve {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}""",
}


@pytest.mark.parametrize("kind", list(TARGETS))
def test_a_lone_surrogate_in_an_app_reply_is_replaced_and_the_next_turn_goes_on(
        tmp_path: Path, kind: str) -> None:
    (tmp_path / "surrogate_app.py").write_text(APP)
    suite = write_suite(tmp_path, f"""\
metadata:
  name: surrogates
  target:
{TARGETS[kind]}
evals:
  - name: goes-on
    prompt: first
    checks:
      - match: "fine"
      - prompt: second
        checks:
          - match: "fine"
""")
    session = dataclasses.replace(FAST_RETRIES, isolate_apps=kind == "python-worker")
    # The worker imports turncheck as this process does (a work tree's sources first).
    env = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    report = run_paths([suite], None, "replay", session=session, env=env)
    [result] = report.suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 2), result.error
    assert result.turns[0].response == "broken \ufffd reply"
