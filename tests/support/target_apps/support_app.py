"""A small support-bot app for the app-target tests: an HTTP server (stdlib) whose replies
come from a model it calls itself with the official `openai` or `anthropic` SDK.

    python support_app.py PORT

Environment: APP_API (chat | responses | anthropic), APP_STREAM ("1" streams), APP_CALLS
(model calls per user turn, default 1), APP_CRASH_ON_TURN (exit at that request),
APP_HUGE ("1": answer a gigabyte), APP_FORWARD_HEADER ("1": copy the request's
X-Turncheck-Turn header onto the model calls), APP_INFLIGHT_FILE (where the app writes the
most /chat requests it answered at once), APP_SYSTEM_PROMPT (the system prompt, in code by
default), APP_UNHEALTHY ("1": /health answers 503), APP_DELAY (seconds before each
reply), APP_PID_FILE (where the app writes its process group id), APP_REWRITE ("1": the
model is sent the user's messages with their words reversed, as an app that rewrites them
would), APP_TURN_HEADER (an X-Turncheck-Turn header put on every model call). History is kept
server-side per `session_id` of the request body; a request without one starts a fresh
conversation. Endpoints: GET /health, POST /chat
{message, session_id} -> {reply, session_id}.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYSTEM_PROMPT = os.environ.get("APP_SYSTEM_PROMPT", "You are the support bot of Example Co.")
MODEL_OPENAI = "gpt-4o-mini"
MODEL_ANTHROPIC = "claude-3-5-haiku-latest"
HISTORY: dict[str, list[dict[str, str]]] = {}
LOCK = threading.Lock()
REQUESTS = [0]
IN_FLIGHT = [0, 0]  # now, most
FORWARDED = threading.local()


def forwarded_headers() -> dict[str, str]:
    return dict(getattr(FORWARDED, "headers", {}))


def ask_openai_chat(messages: list[dict[str, str]], stream: bool) -> str:
    import openai

    client = openai.OpenAI(default_headers=forwarded_headers())  # base URL, key: environment
    full = [{"role": "system", "content": SYSTEM_PROMPT}, *messages]
    if not stream:
        answer = client.chat.completions.create(model=MODEL_OPENAI, messages=full)  # type: ignore[arg-type]
        return answer.choices[0].message.content or ""
    chunks = client.chat.completions.create(model=MODEL_OPENAI, messages=full, stream=True,  # type: ignore[arg-type]
                                            stream_options={"include_usage": True})
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def ask_openai_responses(messages: list[dict[str, str]], stream: bool) -> str:
    import openai

    client = openai.OpenAI(default_headers=forwarded_headers())
    if not stream:
        answer = client.responses.create(model=MODEL_OPENAI, instructions=SYSTEM_PROMPT,
                                         input=messages)  # type: ignore[arg-type]
        return answer.output_text
    events = client.responses.create(model=MODEL_OPENAI, instructions=SYSTEM_PROMPT,
                                     input=messages, stream=True)  # type: ignore[arg-type]
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def ask_anthropic(messages: list[dict[str, str]], stream: bool) -> str:
    import anthropic

    client = anthropic.Anthropic(default_headers=forwarded_headers())  # base URL, key: env
    if not stream:
        answer = client.messages.create(model=MODEL_ANTHROPIC, max_tokens=200,
                                        system=SYSTEM_PROMPT, messages=messages)  # type: ignore[arg-type]
        return "".join(b.text for b in answer.content if b.type == "text")
    with client.messages.stream(model=MODEL_ANTHROPIC, max_tokens=200, system=SYSTEM_PROMPT,
                                messages=messages) as events:  # type: ignore[arg-type]
        return "".join(events.text_stream)


ASK = {"chat": ask_openai_chat, "responses": ask_openai_responses, "anthropic": ask_anthropic}


def rewritten(message: str) -> str:
    return " ".join(reversed(message.split())) if os.environ.get("APP_REWRITE") == "1" \
        else message


def reply_to(message: str, session_id: str) -> str:
    with LOCK:
        history = HISTORY.setdefault(session_id, [])
        history.append({"role": "user", "content": rewritten(message)})
        sent = list(history)
    ask = ASK[os.environ.get("APP_API", "chat")]
    stream = os.environ.get("APP_STREAM") == "1"
    answer = ask(sent, stream)
    for number in range(2, int(os.environ.get("APP_CALLS", "1")) + 1):  # a review call
        ask([*sent, {"role": "assistant", "content": answer},
             {"role": "user", "content": f"Review your answer (pass {number})."}], stream)
    with LOCK:
        history.append({"role": "assistant", "content": answer})
    return answer


def _count_in_flight(change: int) -> None:
    with LOCK:
        IN_FLIGHT[0] += change
        IN_FLIGHT[1] = max(IN_FLIGHT)
        if os.environ.get("APP_INFLIGHT_FILE") and change > 0:
            with open(os.environ["APP_INFLIGHT_FILE"], "w") as file:
                file.write(str(IN_FLIGHT[1]))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(503 if os.environ.get("APP_UNHEALTHY") == "1" else 200, b'{"ok": true}')

    def do_POST(self) -> None:
        REQUESTS[0] += 1
        if REQUESTS[0] == int(os.environ.get("APP_CRASH_ON_TURN", "0")):
            print("app: crashing on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        time.sleep(float(os.environ.get("APP_DELAY", "0")))
        if os.environ.get("APP_HUGE") == "1":
            self._huge()
            return
        session_id = body.get("session_id") or uuid.uuid4().hex
        turn = self.headers.get("X-Turncheck-Turn")
        FORWARDED.headers = {"X-Turncheck-Turn": turn} \
            if turn and os.environ.get("APP_FORWARD_HEADER") == "1" else {}
        if os.environ.get("APP_TURN_HEADER"):
            FORWARDED.headers = {"X-Turncheck-Turn": os.environ["APP_TURN_HEADER"]}
        _count_in_flight(+1)
        try:
            text = reply_to(str(body.get("message", "")), session_id)
        except Exception as exc:
            self._send(500, json.dumps({"error": repr(exc)}).encode())
            return
        finally:
            _count_in_flight(-1)
        self._send(200, json.dumps({"reply": text, "session_id": session_id}).encode())

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(1 << 30))
        self.end_headers()
        block = b"x" * (1 << 20)
        try:
            for _ in range(1 << 10):
                self.wfile.write(block)
        except OSError:
            pass

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    if os.environ.get("APP_PID_FILE"):
        with open(os.environ["APP_PID_FILE"], "w") as file:
            file.write(str(os.getpgrp()))
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
