"""A small support bot: an HTTP server whose answers come from a model it calls with the
official `openai` SDK (`pip install openai aiohttp`).

    OPENAI_API_KEY=sk-... python app.py 8080
    curl -H 'content-type: application/json' localhost:8080/chat \
         -d '{"message": "Where is order A1001?", "session_id": "s1"}'

It keeps each conversation server-side, by `session_id`, and runs its tools itself:
`lookup_order`, and `escalate` (which hands the conversation to a person). The SDK reads
OPENAI_BASE_URL and OPENAI_API_KEY from the environment; under turncheck they point at
its recording proxy.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from openai import AsyncOpenAI

MODEL = "gpt-4o-mini"
SYSTEM_PROMPT = (
    "You are the support bot of Example Co. Use lookup_order to check an order before "
    "you say anything about it. Answer in one or two short sentences."
)
ORDERS = {
    "A1001": {"status": "shipped", "carrier": "DHL", "arrives": "2 December"},
    "A1002": {"status": "delayed", "arrives": "9 December"},
}
TOOLS = [{
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "The status of an order, by its id (like A1001).",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
    },
}, {
    "type": "function",
    "function": {
        "name": "escalate",
        "description": "Hand the conversation to a human agent, with a one-line summary.",
        "parameters": {"type": "object", "properties": {"summary": {"type": "string"}},
                       "required": ["summary"]},
    },
}]
MAX_TOOL_ROUNDS = 3
SESSIONS: dict[str, list[dict[str, Any]]] = {}
"""Each conversation's messages so far (system prompt aside), by session id."""


def lookup_order(order_id: str) -> dict[str, Any]:
    return ORDERS.get(order_id.strip().upper(), {"error": f"there is no order {order_id}"})


def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "escalate":
        return {"handed_over": True, "summary": str(arguments.get("summary", ""))}
    return lookup_order(str(arguments.get("order_id", "")))


async def answer(client: AsyncOpenAI, history: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """The bot's answer to the conversation in `history` (which it extends), and the tool
    calls it ran on the way."""
    ran: list[dict[str, Any]] = []
    for _ in range(MAX_TOOL_ROUNDS):
        reply = await client.chat.completions.create(
            model=MODEL, temperature=0, tools=TOOLS,
            messages=[{"role": "system", "content": SYSTEM_PROMPT}, *history],
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            history.append({"role": "assistant", "content": message.content or ""})
            return message.content or "", ran
        history.append({"role": "assistant", "content": message.content,
                        "tool_calls": [call.model_dump() for call in message.tool_calls]})
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            ran.append({"name": call.function.name, "arguments": arguments})
            result = run_tool(call.function.name, arguments)
            history.append({"role": "tool", "tool_call_id": call.id,
                            "content": json.dumps(result)})
    return "Sorry, I could not finish looking that up.", ran


async def chat(request: web.Request) -> web.Response:
    """POST /chat {message, session_id} -> {reply, session_id, tool_calls}"""
    body = await request.json()
    session_id = str(body.get("session_id") or uuid.uuid4().hex)
    history = SESSIONS.setdefault(session_id, [])
    history.append({"role": "user", "content": str(body.get("message", ""))})
    text, tool_calls = await answer(request.app["client"], history)
    return web.json_response({"reply": text, "session_id": session_id,
                              "tool_calls": tool_calls})


async def health(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def open_client(app: web.Application) -> AsyncIterator[None]:
    app["client"] = AsyncOpenAI()
    yield
    await app["client"].close()


def main() -> None:
    app = web.Application()
    app.cleanup_ctx.append(open_client)
    app.add_routes([web.post("/chat", chat), web.get("/health", health)])
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
