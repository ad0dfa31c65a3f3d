"""A scripted OpenAI/Anthropic-compatible HTTP server for tests, on 127.0.0.1.

Endpoints: `POST /v1/chat/completions`, `POST /v1/embeddings`, `POST /v1/messages`.
Replies come from rules (first match wins) or the default reply. Every request
is recorded. Faults can be scripted per rule or injected at a seeded random rate.
Each connection gets its own thread, so latency and hangs never block others.

    with ScriptedServer() as server:
        server.add_rule("105", contains="15 * 7")
        server.add_rule(fault="server_error", times=1)   # first request fails
        server.set_faults(0.2, ("rate_limit", "drop"), seed=1)
        server.set_latency(0.05)
        ... server.base_url ...   # http://127.0.0.1:PORT/v1
        server.requests[-1].json["messages"]
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Json = dict[str, Any]
Fault = Literal["rate_limit", "server_error", "bad_request", "hang", "malformed", "drop"]
Reply = str | Callable[[Json], str]
EMBEDDING_DIMENSIONS = 64


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    json: Json
    headers: dict[str, str]


@dataclass
class Rule:
    reply: Reply | None = None
    contains: str | None = None
    pattern: str | None = None
    turn: int | None = None
    when: Callable[[Json], bool] | None = None
    usage: tuple[int, int] | None = None
    fault: Fault | None = None
    retry_after: str | None = "0"
    times: int | None = None
    used: int = 0

    def matches(self, body: Json) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        text = last_user_text(body)
        return (
            (self.contains is None or self.contains in text)
            and (self.pattern is None or re.search(self.pattern, text) is not None)
            and (self.turn is None or user_turns(body) == self.turn)
            and (self.when is None or self.when(body))
        )


@dataclass
class _RandomFaults:
    rate: float = 0.0
    kinds: Sequence[Fault] = ()
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    retry_after: str | None = "0"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Anthropic content blocks
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def last_user_text(body: Json) -> str:
    """The last user message (chat) or all inputs joined (embeddings)."""
    if "input" in body:
        inputs = body["input"]
        return "\n".join(inputs) if isinstance(inputs, list) else str(inputs)
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _content_text(users[-1].get("content")) if users else ""


def user_turns(body: Json) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "user")


def word_count(text: str) -> int:
    return len(re.findall(r"\w+", text))


def embed_text(text: str) -> list[float]:
    """Bag of words hashed into 64 dims, L2-normalised: shared words → high cosine."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.md5(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % EMBEDDING_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


class ScriptedServer:
    def __init__(self, default_reply: Reply = "OK", hang_seconds: float = 30.0) -> None:
        self.default_reply = default_reply
        self.hang_seconds = hang_seconds
        self._rules: list[Rule] = []
        self._faults = _RandomFaults()
        self._latency = 0.0
        self._received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.scripted = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._received)

    def add_rule(
        self,
        reply: Reply | None = None,
        *,
        contains: str | None = None,
        pattern: str | None = None,
        turn: int | None = None,
        when: Callable[[Json], bool] | None = None,
        usage: tuple[int, int] | None = None,
        fault: Fault | None = None,
        retry_after: str | None = "0",
        times: int | None = None,
    ) -> Rule:
        """`reply` (or `fault`) for requests matching every given predicate, `times` times."""
        rule = Rule(reply, contains, pattern, turn, when, usage, fault, retry_after, times)
        with self._lock:
            self._rules.append(rule)
        return rule

    def set_faults(
        self,
        rate: float,
        kinds: Sequence[Fault] = ("rate_limit", "server_error", "malformed", "drop"),
        *,
        seed: int = 0,
        retry_after: str | None = "0",
    ) -> None:
        with self._lock:
            self._faults = _RandomFaults(rate, tuple(kinds), random.Random(seed), retry_after)

    def set_latency(self, seconds: float) -> None:
        self._latency = seconds

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self._received.clear()
            self._faults = _RandomFaults()
            self._latency = 0.0

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- used by the handler threads --

    def receive(self, path: str, body: Json, headers: dict[str, str]) -> tuple[Rule | None, str]:
        """Record the request; pick (rule, fault-or-empty) under the lock."""
        with self._lock:
            self._received.append(ReceivedRequest(path, body, headers))
            rule = next((r for r in self._rules if r.matches(body)), None)
            if rule is not None:
                rule.used += 1
            random_fault = ""
            if self._faults.kinds and self._faults.rng.random() < self._faults.rate:
                random_fault = self._faults.rng.choice(list(self._faults.kinds))
        return rule, (rule.fault if rule and rule.fault else random_fault)

    def reply_for(self, rule: Rule | None, body: Json) -> str:
        reply = rule.reply if rule is not None and rule.reply is not None else self.default_reply
        return reply(body) if callable(reply) else reply

    def retry_after_for(self, rule: Rule | None) -> str | None:
        return rule.retry_after if rule is not None and rule.fault else self._faults.retry_after

    def wait_latency(self) -> None:
        if self._latency > 0:
            self._stopping.wait(self._latency)

    def hang(self) -> None:
        self._stopping.wait(self.hang_seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    scripted: ScriptedServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        scripted = self.server.scripted
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        rule, fault = scripted.receive(self.path, body, dict(self.headers.items()))
        scripted.wait_latency()
        if fault:
            self._send_fault(fault, scripted.retry_after_for(rule))
            return
        self._answer(rule, body)

    def _answer(self, rule: Rule | None, body: Json) -> None:
        scripted = self.server.scripted
        if self.path == "/v1/embeddings":
            self._send_json(200, embeddings_payload(body))
        elif self.path == "/v1/chat/completions":
            reply = scripted.reply_for(rule, body)
            self._send_json(200, chat_payload(body, reply, _usage(rule, body, reply)))
        elif self.path == "/v1/messages":
            reply = scripted.reply_for(rule, body)
            self._send_json(200, messages_payload(body, reply, _usage(rule, body, reply)))
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def _send_fault(self, fault: str, retry_after: str | None) -> None:
        if fault == "rate_limit":
            headers = {"retry-after": retry_after} if retry_after is not None else {}
            self._send_json(429, {"error": {"message": "rate limited"}}, headers)
        elif fault == "server_error":
            self._send_json(500, {"error": {"message": "scripted internal error"}})
        elif fault == "bad_request":
            error = {"message": "scripted bad request", "type": "invalid_request_error"}
            self._send_json(400, {"error": error})
        elif fault == "malformed":
            self._send_raw(200, b'{"choices": [{"message": ', "application/json")
        elif fault == "hang":
            self.server.scripted.hang()
            self.close_connection = True
        elif fault == "drop":
            self.close_connection = True  # return without writing anything

    def _send_json(self, status: int, payload: Json, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _usage(rule: Rule | None, body: Json, reply: str) -> tuple[int, int]:
    if rule is not None and rule.usage is not None:
        return rule.usage
    prompt_words = sum(word_count(_content_text(m.get("content"))) for m in body["messages"])
    return prompt_words + word_count(str(body.get("system", ""))), word_count(reply)


def chat_payload(body: Json, reply: str, usage: tuple[int, int]) -> Json:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def messages_payload(body: Json, reply: str, usage: tuple[int, int]) -> Json:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [{"type": "text", "text": reply}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def embeddings_payload(body: Json) -> Json:
    inputs = body.get("input", [])
    texts = inputs if isinstance(inputs, list) else [inputs]
    return {
        "object": "list",
        "model": body.get("model"),
        "data": [
            {"object": "embedding", "index": i, "embedding": embed_text(str(t))}
            for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": sum(word_count(str(t)) for t in texts)},
    }
