"""The starter `turncheck init --target http` writes: a suite whose `target:` starts a
small chat app (standard library only) that asks the model through `OPENAI_BASE_URL`,
and the cassette of its model calls, so `turncheck run` replays it with no key from the
first minute. The user points `start`, `ready` and `http` at their own app and records."""

from __future__ import annotations

import json

import yaml

APP_PATH = "evals/starter_app.py"
MODEL = "gpt-4o-mini"
SYSTEM = "You are a helpful assistant. Answer in one short sentence."
RECORDED_BASE = "https://api.openai.com/v1"
QUESTIONS = {
    "What is the capital of France?": "The capital of France is Paris.",
    "And of Italy?": "The capital of Italy is Rome.",
}

SUITE = """\
# A starter suite for an app (written by `turncheck init --target http`). turncheck
# starts the app (here evals/starter_app.py, a stand-in: point `start`, `ready` and
# `http` at your own app), sends it each user turn over HTTP and checks its replies.
# The app's own model calls go through turncheck's recording proxy (the app is given
# OPENAI_BASE_URL and a placeholder key) into starter.eval.cassette.yaml, so every pull
# request replays them with no key. After changing the app or the prompts, record once
# with the key your app's provider needs:
#   OPENAI_API_KEY=... turncheck record evals/
metadata:
  name: starter
  model: gpt-4o-mini          # the app's model: labels the run and prices its calls
  target:
    start: python starter_app.py {port}   # run in this folder; {port} is a free port
    ready: /health
    http:
      path: /chat
      body: {message: "{{ last_message }}"}
      reply: reply
evals:
  - name: capitals
    turns:                    # scripted turns, sent in order
      - prompt: What is the capital of France?
        checks:
          - match: "*Paris*"
      - prompt: And of Italy?
        checks:
          - match: "*Rome*"
"""

APP = '''\
"""A stand-in chat app for the starter suite (written by `turncheck init --target http`):
POST /chat {"message": ...} answers {"reply": ...}, asking the model through
OPENAI_BASE_URL with OPENAI_API_KEY. Replace it with your own app."""

import json
import os
import sys
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = @MODEL@
SYSTEM = @SYSTEM@


def ask(message):
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    body = {"model": MODEL, "temperature": 0,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": message}]}
    request = urllib.request.Request(
        base + "/chat/completions", data=json.dumps(body).encode(),
        headers={"content-type": "application/json",
                 "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)["choices"][0]["message"]["content"]


class Chat(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_json(200, {"ok": True})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        message = json.loads(self.rfile.read(length))["message"]
        self.send_json(200, {"reply": ask(message)})

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Chat).serve_forever()
'''.replace("@MODEL@", json.dumps(MODEL)).replace("@SYSTEM@", json.dumps(SYSTEM))


def _interaction(question: str, answer: str) -> dict[str, object]:
    request = {"model": MODEL, "temperature": 0,
               "messages": [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": question}]}
    reply = {"id": "chatcmpl-starter", "object": "chat.completion", "model": MODEL,
             "choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": answer}}],
             "usage": {"prompt_tokens": 24, "completion_tokens": 8, "total_tokens": 32}}
    return {
        "request": {"body": json.dumps(request, separators=(",", ":")),
                    "headers": {"content-type": ["application/json"]},
                    "method": "POST", "uri": f"{RECORDED_BASE}/chat/completions"},
        "response": {"body": {"string": json.dumps(reply)},
                     "headers": {"content-type": ["application/json"]},
                     "status": {"code": 200, "message": "OK"}},
    }


def cassette() -> str:
    """The starter app's model calls, as `turncheck record` would store them."""
    header = ("# The starter app's model calls (written by `turncheck init --target http` "
              "as a recording\n# would store them). `turncheck record evals/` replaces "
              "them with your app's.\n")
    return header + yaml.safe_dump(
        {"interactions": [_interaction(q, a) for q, a in QUESTIONS.items()], "version": 1},
        sort_keys=True, allow_unicode=True, width=88)
