"""A small tool-using support app for the app-call tests: an HTTP server (stdlib) that
asks its model through the official `openai` or `anthropic` SDK, runs the tools the model
asks for itself (`lookup_order`, `issue_refund`) and replies with the model's final
answer. Its replies report no tool calls: only the recording proxy sees them.

    python refund_app.py PORT

Environment: APP_API (chat | responses | anthropic), APP_STREAM ("1" streams), APP_SYSTEM_PROMPT,
APP_TOOLS (comma-separated tools offered, default both), APP_STREAM_OPTIONS ("0": a
streamed chat call without `stream_options`, as OpenAI's quickstart does; "off": with
`include_usage: false`).
Endpoints: GET /health, POST /chat {message, session_id} -> {reply, session_id}.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYSTEM_PROMPT = os.environ.get("APP_SYSTEM_PROMPT", "You are the refund desk of Example Co.")
TOOLS = {
    "lookup_order": {"description": "Look an order up by its id.",
                     "parameters": {"type": "object", "required": ["order_id"],
                                    "properties": {"order_id": {"type": "string"}}}},
    "issue_refund": {"description": "Refund an order.",
                     "parameters": {"type": "object", "required": ["order_id"],
                                    "properties": {"order_id": {"type": "string"},
                                                   "amount": {"type": "number"}}}},
}
HISTORY: dict[str, list[Any]] = {}
STREAM = os.environ.get("APP_STREAM") == "1"


def offered() -> list[str]:
    names = os.environ.get("APP_TOOLS", "lookup_order,issue_refund")
    return [name for name in names.split(",") if name in TOOLS]


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    if name == "lookup_order":
        return json.dumps({"order_id": arguments.get("order_id"), "status": "delivered",
                           "total": 42.0})
    return json.dumps({"refunded": arguments.get("amount", 0)})


def ask_chat(history: list[Any]) -> str:
    import openai

    client = openai.OpenAI()
    tools = [{"type": "function", "function": {"name": name, **TOOLS[name]}}
             for name in offered()]
    for _ in range(6):
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, *history]
        text, calls = _chat_once(client, messages, tools)
        if not calls:
            history.append({"role": "assistant", "content": text})
            return text
        history.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
        history += [{"role": "tool", "tool_call_id": c["id"],
                     "content": run_tool(c["name"], json.loads(c["arguments"] or "{}"))}
                    for c in calls]
    return "gave up"


def _chat_once(client: Any, messages: list[Any], tools: list[Any]
               ) -> tuple[str, list[dict[str, str]]]:
    extra: dict[str, Any] = {"tools": tools} if tools else {}
    if not STREAM:
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                **extra)
        message = answer.choices[0].message
        return message.content or "", [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or []]
    options = os.environ.get("APP_STREAM_OPTIONS", "1")
    if options != "0":
        extra["stream_options"] = {"include_usage": options == "1"}
    text, calls = "", {}  # type: ignore[var-annotated]
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                stream=True, **extra):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for part in delta.tool_calls or []:
            call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = part.id or call["id"]
            call["name"] += (part.function.name or "") if part.function else ""
            call["arguments"] += (part.function.arguments or "") if part.function else ""
    return text, [calls[index] for index in sorted(calls)]


def ask_responses(history: list[Any]) -> str:
    """OpenAI's Responses API: `instructions`, `function_call` items answered with
    `function_call_output` items; streamed, the answer is `response.completed`'s."""
    import openai

    client = openai.OpenAI()
    tools = [{"type": "function", "name": name, **TOOLS[name]} for name in offered()]
    for _ in range(6):
        answer = client.responses.create(model="gpt-4o-mini", instructions=SYSTEM_PROMPT,
                                         input=history, tools=tools, stream=STREAM)
        if STREAM:
            answer = next(event.response for event in answer
                          if event.type == "response.completed")
        calls = [item for item in answer.output if item.type == "function_call"]
        if not calls:
            history.append({"role": "assistant", "content": answer.output_text})
            return str(answer.output_text)
        for call in calls:
            history += [{"type": "function_call", "call_id": call.call_id, "name": call.name,
                         "arguments": call.arguments},
                        {"type": "function_call_output", "call_id": call.call_id,
                         "output": run_tool(call.name, json.loads(call.arguments or "{}"))}]
    return "gave up"


def ask_anthropic(history: list[Any]) -> str:
    import anthropic

    client = anthropic.Anthropic()
    tools = [{"name": name, "description": TOOLS[name]["description"],
              "input_schema": TOOLS[name]["parameters"]} for name in offered()]
    for _ in range(6):
        if STREAM:
            with client.messages.stream(model="claude-3-5-haiku-latest", max_tokens=300,
                                        system=SYSTEM_PROMPT, messages=history,
                                        tools=tools) as events:
                answer = events.get_final_message()
        else:
            answer = client.messages.create(model="claude-3-5-haiku-latest", max_tokens=300,
                                            system=SYSTEM_PROMPT, messages=history,
                                            tools=tools)
        blocks = [block.model_dump() for block in answer.content]
        history.append({"role": "assistant", "content": blocks})
        uses = [block for block in answer.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in answer.content if block.type == "text")
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use.id,
             "content": run_tool(use.name, dict(use.input))} for use in uses]})
    return "gave up"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, {"ok": True})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        session_id = body.get("session_id") or uuid.uuid4().hex
        history = HISTORY.setdefault(session_id, [])
        history.append({"role": "user", "content": str(body.get("message", ""))})
        ask = {"anthropic": ask_anthropic, "responses": ask_responses}.get(
            os.environ.get("APP_API", ""), ask_chat)
        try:
            text = ask(history)
        except Exception as exc:
            self._send(500, {"error": repr(exc)})
            return
        self._send(200, {"reply": text, "session_id": session_id})

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
