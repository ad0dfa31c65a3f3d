"""A scripted OpenAI/Anthropic-compatible HTTP server for tests, on 127.0.0.1.

Endpoints: `POST /v1/chat/completions`, `POST /v1/embeddings`, `POST /v1/messages`,
`POST /v1/responses` (OpenAI's Responses API). A request with `"stream": true` is
answered as the API streams it (server-sent events, usage in the last events).
Replies come from rules (first match wins) or the default reply. Every request
is recorded. Faults can be scripted per rule or injected at a seeded random rate.
The server is asyncio on its own thread and event loop: latency and hangs are
`asyncio.sleep`s that never block other connections, and a single server thread
keeps GIL contention with the client under test low.

    with ScriptedServer() as server:
        server.add_rule("105", contains="15 * 7")
        server.add_rule(fault="server_error", times=1)   # first request fails
        server.set_faults(0.2, ("rate_limit", "drop"), seed=1)
        server.set_latency(0.05)
        ... server.base_url ...   # http://127.0.0.1:PORT/v1
        server.requests[-1].json["messages"]
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

Json = dict[str, Any]
Fault = Literal[
    "rate_limit", "server_error", "bad_request", "hang", "malformed", "drop", "no_choices",
    "llama_validation", "unauthorized",
]


@dataclass(frozen=True)
class ToolCalls:
    """A reply that calls tools: `(name, arguments)` pairs, arguments a mapping or the
    raw (possibly malformed) JSON text; several pairs are parallel calls in one answer."""

    calls: tuple[tuple[str, Any], ...]
    text: str = ""

    @classmethod
    def one(cls, name: str, **arguments: Any) -> ToolCalls:
        return cls(((name, arguments),))


Reply = str | ToolCalls | Callable[[Json], "str | ToolCalls"]
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


def conversation_of(body: Json) -> list[Json]:
    """The messages of a chat, Messages or Responses request (a Responses string input is
    one user message)."""
    if "messages" in body:
        return list(body["messages"])
    inputs = body.get("input")
    if isinstance(inputs, str):
        return [{"role": "user", "content": inputs}]
    if isinstance(inputs, list) and all(isinstance(i, dict) for i in inputs):
        return [{"role": i.get("role"), "content": _input_text(i.get("content"))} for i in inputs]
    return []


def _input_text(content: Any) -> str:
    if isinstance(content, list):  # Responses content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def last_user_text(body: Json) -> str:
    """The last user message (chat) or all inputs joined (embeddings)."""
    if "input" in body and "model" in body and conversation_of(body) and \
            not _is_embedding_input(body["input"]):
        users = [m for m in conversation_of(body) if m.get("role") == "user"]
        return _content_text(users[-1].get("content")) if users else ""
    if "input" in body:
        inputs = body["input"]
        return "\n".join(inputs) if isinstance(inputs, list) else str(inputs)
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _content_text(users[-1].get("content")) if users else ""


def _is_embedding_input(inputs: Any) -> bool:
    return isinstance(inputs, list) and all(isinstance(i, str) for i in inputs)


def user_turns(body: Json) -> int:
    return sum(1 for m in conversation_of(body) if m.get("role") == "user")


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
    def __init__(self, default_reply: Reply = "OK", hang_seconds: float = 30.0,
                 port: int = 0) -> None:
        """`port` 0 takes a free port; a fixed one serves a recording's base URL."""
        self.default_reply = default_reply
        self.hang_seconds = hang_seconds
        self._rules: list[Rule] = []
        self._faults = _RandomFaults()
        self._latency = 0.0
        self._received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = port
        self._stream_hold: tuple[threading.Event, float] | None = None
        self.streams_released: list[bool] = []
        """Per streamed answer held by `hold_streams`: whether the client let it go on."""

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

    def hold_streams(self, until: threading.Event, timeout: float) -> None:
        """Send a streamed answer's first event, then the rest only once `until` is set
        (or `timeout` seconds passed): whoever sets it has seen the first event."""
        self._stream_hold = (until, timeout)

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self._received.clear()
            self._faults = _RandomFaults()
            self._latency = 0.0

    def start(self) -> ScriptedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=5)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port,
                                                  backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._connections):
            task.cancel()  # also ends hangs and latency sleeps
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._serve_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # our own shutdown; re-raising would only log noise on 3.11
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False closes the connection."""
        request = await _read_request(reader)
        if request is None:
            return False
        path, headers, raw = request
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            await _write(writer, 400, {"error": {"message": "request body is not JSON"}})
            return True
        rule, fault = self._receive(path, body, headers)
        if self._latency > 0:
            await asyncio.sleep(self._latency)
        if fault:
            return await self._send_fault(writer, fault, rule)
        status, payload = self._answer(path, rule, body)
        if status == 200 and body.get("stream") is True:
            events = sse_events(_route(path), body, payload)
            if self._stream_hold is None:
                await _write_raw(writer, 200, events, content_type="text/event-stream")
            else:
                await self._write_held(writer, events, *self._stream_hold)
        else:
            await _write(writer, status, payload)
        return True

    async def _write_held(self, writer: asyncio.StreamWriter, events: bytes,
                          until: threading.Event, timeout: float) -> None:
        first, rest = events.split(b"\n\n", 1)
        await _write_raw(writer, 200, first + b"\n\n", content_type="text/event-stream",
                         length=len(events))
        released = await asyncio.get_running_loop().run_in_executor(None, until.wait, timeout)
        self.streams_released.append(released)
        writer.write(rest)
        await writer.drain()

    def _receive(self, path: str, body: Json, headers: dict[str, str]) -> tuple[Rule | None, str]:
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

    def _answer(self, path: str, rule: Rule | None, body: Json) -> tuple[int, Json]:
        """Routes by the path's end (Azure's deployment paths, Gemini's `/v1beta/openai`);
        the query string is ignored (recorded with the request)."""
        path = _route(path)
        if path == "/v1/embeddings":
            return 200, embeddings_payload(body)
        if path not in ("/v1/chat/completions", "/v1/messages", "/v1/responses"):
            return 404, {"error": {"message": f"no route {path}"}}
        reply = rule.reply if rule is not None and rule.reply is not None else self.default_reply
        answer = reply(body) if callable(reply) else reply
        calls = answer if isinstance(answer, ToolCalls) else None
        text = answer.text if isinstance(answer, ToolCalls) else answer
        usage = _usage(rule, body, text + (json.dumps(calls.calls) if calls else ""))
        if path == "/v1/messages":
            return 200, messages_payload(body, text, usage, calls)
        if path == "/v1/responses":
            return 200, responses_payload(body, text, usage, calls)
        return 200, chat_payload(body, text, usage, calls)

    async def _send_fault(
        self, writer: asyncio.StreamWriter, fault: str, rule: Rule | None
    ) -> bool:
        retry_after = (
            rule.retry_after if rule is not None and rule.fault else (self._faults.retry_after)
        )
        if fault == "rate_limit":
            headers = {"retry-after": retry_after} if retry_after is not None else {}
            await _write(writer, 429, {"error": {"message": "rate limited"}}, headers)
        elif fault == "server_error":
            await _write(writer, 500, {"error": {"message": "scripted internal error"}})
        elif fault == "bad_request":
            error = {"message": "scripted bad request", "type": "invalid_request_error"}
            await _write(writer, 400, {"error": error})
        elif fault == "llama_validation":  # llama-cpp-python: HTTP 500 for a bad field
            message = "1 validation error: {'loc': ('body', 'response_format', 'type')}"
            await _write(writer, 500, {"error": {"message": message}})
        elif fault == "unauthorized":
            await _write(writer, 401, {"error": {"message": "Incorrect API key provided"}})
        elif fault == "malformed":
            await _write_raw(writer, 200, b'{"choices": [{"message": ')
        elif fault == "no_choices":  # valid JSON, status 200, but no completion in it
            await _write(writer, 200, {"id": "cmpl-empty", "object": "chat.completion"})
        elif fault == "hang":
            await asyncio.sleep(self.hang_seconds)
            return False
        return fault != "drop"  # drop: close without writing anything


def _route(path: str) -> str:
    path = path.split("?", 1)[0]
    for route in ("/chat/completions", "/embeddings", "/responses"):
        if path.endswith(route):
            return "/v1" + route
    return path


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    request_line = await reader.readline()
    if not request_line.strip():
        return None
    _method, path, _version = request_line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length") or 0))
    return path, headers, body


async def _write(
    writer: asyncio.StreamWriter, status: int, payload: Json, headers: dict[str, str] | None = None
) -> None:
    await _write_raw(writer, status, json.dumps(payload).encode(), headers)


async def _write_raw(
    writer: asyncio.StreamWriter, status: int, data: bytes, headers: dict[str, str] | None = None,
    content_type: str = "application/json", length: int | None = None,
) -> None:
    """`length`: the whole body's, when `data` is only its start."""
    lines = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        f"content-type: {content_type}",
        f"content-length: {len(data) if length is None else length}",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
    await writer.drain()


def _usage(rule: Rule | None, body: Json, reply: str) -> tuple[int, int]:
    if rule is not None and rule.usage is not None:
        return rule.usage
    prompt_words = sum(word_count(_content_text(m.get("content"))) for m in conversation_of(body))
    system = str(body.get("system", "")) + str(body.get("instructions") or "")
    return prompt_words + word_count(system), word_count(reply)


def tool_results(body: Json) -> list[str]:
    """The tool results a request sends back (OpenAI `tool` messages or Responses
    `function_call_output` items, Anthropic `tool_result` blocks), in order."""
    results: list[str] = []
    inputs = body.get("input")
    if isinstance(inputs, list):  # the Responses API's function_call_output items
        results += [str(i.get("output")) for i in inputs
                    if isinstance(i, dict) and i.get("type") == "function_call_output"]
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            results.append(str(message.get("content")))
        content = message.get("content")
        if isinstance(content, list):
            results += [_content_text(b.get("content")) for b in content
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
    return results


def answered_rounds(body: Json) -> int:
    """Assistant messages (Responses: function calls) already in the request: tells one
    round's call ids from another's."""
    inputs = body.get("input") if isinstance(body.get("input"), list) else []
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant") + \
        sum(1 for i in inputs if isinstance(i, dict) and i.get("type") == "function_call")


def _openai_calls(body: Json, calls: ToolCalls) -> list[Json]:
    round_number = answered_rounds(body)
    return [{"id": f"call_{round_number}_{index}", "type": "function",
             "function": {"name": name, "arguments": arguments if isinstance(arguments, str)
                          else json.dumps(arguments)}}
            for index, (name, arguments) in enumerate(calls.calls)]


def chat_payload(body: Json, reply: str, usage: tuple[int, int],
                 calls: ToolCalls | None = None) -> Json:
    message: Json = {"role": "assistant", "content": reply}
    if calls is not None:
        message = {"role": "assistant", "content": reply or None,
                   "tool_calls": _openai_calls(body, calls)}
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls is not None else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def messages_payload(body: Json, reply: str, usage: tuple[int, int],
                     calls: ToolCalls | None = None) -> Json:
    """A text block, or a `tool_use` block (the reply's JSON as its input) when the
    request forces a tool call; `calls` become `tool_use` blocks after the text."""
    forced = body.get("tool_choice") or {}
    content: Json = {"type": "text", "text": reply}
    if calls is not None:
        round_number = answered_rounds(body)
        blocks = [{"type": "text", "text": reply}] if reply else []
        blocks += [{"type": "tool_use", "id": f"toolu_{round_number}_{index}", "name": name,
                    "input": arguments if isinstance(arguments, dict) else {"raw": arguments}}
                   for index, (name, arguments) in enumerate(calls.calls)]
        return {"id": "msg_scripted", "type": "message", "role": "assistant",
                "model": body.get("model"), "content": blocks, "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}
    if forced.get("type") == "tool":
        try:
            arguments = json.loads(reply)
        except ValueError:
            arguments = {"text": reply}
        content = {"type": "tool_use", "id": "toolu_scripted", "name": forced.get("name"),
                   "input": arguments}
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": [content],
        "stop_reason": "tool_use" if forced.get("type") == "tool" else "end_turn",
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


def responses_payload(body: Json, reply: str, usage: tuple[int, int],
                      calls: ToolCalls | None = None) -> Json:
    """A Responses API answer: one assistant message with one output_text part, or the
    `function_call` items of `calls`."""
    output: list[Json] = [{"type": "message", "id": "msg_scripted", "status": "completed",
                           "role": "assistant",
                           "content": [{"type": "output_text", "text": reply,
                                        "annotations": []}]}]
    if calls is not None:
        output = [{"type": "function_call", "id": f"fc_{call['id']}", "call_id": call["id"],
                   "status": "completed", **call["function"]}
                  for call in _openai_calls(body, calls)]
    return {
        "id": "resp_scripted", "object": "response", "created_at": 0, "status": "completed",
        "model": body.get("model"),
        "output": output,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                  "total_tokens": sum(usage),
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def _pieces(text: str) -> list[str]:
    """The answer in a few deltas, as a streaming API sends it."""
    return re.findall(r"\S*\s*", text)[:-1] or [text]


def _event(data: Json, name: str | None = None) -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def sse_events(path: str, body: Json, payload: Json) -> bytes:
    """`payload` as the API streams it (OpenAI chat chunks, Anthropic Messages events or
    Responses events), usage where each API puts it."""
    if path == "/v1/messages":
        return _messages_events(payload).encode()
    if path == "/v1/responses":
        return _responses_events(payload).encode()
    return _chat_events(body, payload).encode()


def _chat_events(body: Json, payload: Json) -> str:
    base = {"id": payload["id"], "object": "chat.completion.chunk", "created": 0,
            "model": payload["model"]}
    message = payload["choices"][0]["message"]
    text = message.get("content") or ""
    usage_asked = bool((body.get("stream_options") or {}).get("include_usage"))
    if usage_asked:  # as OpenAI does: every other chunk then has `"usage": null`
        base["usage"] = None
    events = [_event({**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                  "content": ""}}]})]
    events += [_event({**base, "choices": [{"index": 0, "delta": {"content": piece}}]})
               for piece in _pieces(text)]
    events += [_event({**base, "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]})
               for part in _streamed_calls(message.get("tool_calls") or [])]
    events.append(_event({**base, "choices": [{"index": 0, "delta": {},
                                               "finish_reason": payload["choices"][0][
                                                   "finish_reason"]}]}))
    if usage_asked:
        events.append(_event({**base, "choices": [], "usage": payload["usage"]}))
    return "".join(events) + "data: [DONE]\n\n"


def _streamed_calls(calls: list[Json]) -> list[Json]:
    """OpenAI's tool call deltas: the id and name first, then the arguments in pieces."""
    parts: list[Json] = []
    for index, call in enumerate(calls):
        function = call["function"]
        parts.append({"index": index, "id": call["id"], "type": "function",
                      "function": {"name": function["name"], "arguments": ""}})
        arguments = function["arguments"]
        parts += [{"index": index, "function": {"arguments": arguments[i:i + 7]}}
                  for i in range(0, len(arguments), 7)]
    return parts


def _messages_events(payload: Json) -> str:
    text = "".join(b.get("text", "") for b in payload["content"] if b.get("type") == "text")
    usage = payload["usage"]
    start = {**payload, "content": [], "stop_reason": None,
             "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}
    events = [_event({"type": "message_start", "message": start}, "message_start"),
              _event({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")]
    events += [_event({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
               for piece in _pieces(text)]
    events.append(_event({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    for index, block in enumerate(payload["content"][1:] if text else payload["content"]):
        if block.get("type") == "tool_use":
            events += _tool_use_events(index + 1, block)
    events += [_event({"type": "message_delta",
                       "delta": {"stop_reason": payload["stop_reason"], "stop_sequence": None},
                       "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta"),
               _event({"type": "message_stop"}, "message_stop")]
    return "".join(events)


def _responses_events(payload: Json) -> str:
    text = "".join(part["text"] for item in payload["output"] if item["type"] == "message"
                   for part in item["content"])
    started = {**payload, "status": "in_progress", "output": [], "usage": None}
    events = [_event({"type": "response.created", "sequence_number": 0,
                      "response": started}, "response.created")]
    events += [_event({"type": "response.output_text.delta", "item_id": "msg_scripted",
                       "output_index": 0, "content_index": 0, "delta": piece,
                       "sequence_number": n + 1, "logprobs": []},
                      "response.output_text.delta")
               for n, piece in enumerate(_pieces(text))]
    events.append(_event({"type": "response.completed", "sequence_number": len(events) + 1,
                          "response": payload}, "response.completed"))
    return "".join(events)


def _tool_use_events(index: int, block: Json) -> list[str]:
    """A `tool_use` block as Anthropic streams it: its start, its input's JSON in pieces."""
    arguments = json.dumps(block["input"])
    start = {"type": "content_block_start", "index": index,
             "content_block": {**block, "input": {}}}
    return [_event(start, "content_block_start"),
            *(_event({"type": "content_block_delta", "index": index,
                      "delta": {"type": "input_json_delta", "partial_json": arguments[i:i + 7]}},
                     "content_block_delta") for i in range(0, len(arguments), 7)),
            _event({"type": "content_block_stop", "index": index}, "content_block_stop")]
