"""The same conversation logic for the python-function and command targets: it remembers
what the user said, by session id, and answers from that memory (no model)."""

from __future__ import annotations

import json
import sys
from typing import Any

MEMORY: dict[str, list[str]] = {}


def reply(messages: list[dict[str, str]], session_id: str | None) -> str:
    said = MEMORY.setdefault(session_id or "", []) if session_id else []
    said += [m["content"] for m in messages if m["role"] == "user"][-1:]
    text = " ".join(said)
    if "know about me" in messages[-1]["content"]:
        if "Ada" in text and "Paris" in text:
            return "You are Ada from Paris."
        return "I know nothing about you."
    return "Noted."


def answer(messages: list[dict[str, str]], session_id: str | None) -> dict[str, Any]:
    """The python target's function."""
    return {"text": reply(messages, session_id), "tool_calls": [
        {"name": "remember", "arguments": {"fact": messages[-1]["content"]}}]}


async def answer_async(messages: list[dict[str, str]], session_id: str | None) -> str:
    return reply(messages, session_id)


def main() -> None:
    """The command target: one JSON line in, one out."""
    for line in sys.stdin:
        turn = json.loads(line)
        print(json.dumps({"text": reply(turn["messages"], turn["session_id"])}), flush=True)


if __name__ == "__main__":
    main()
