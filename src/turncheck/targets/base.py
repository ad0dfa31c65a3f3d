"""What every kind of target shares: the turn sent to the app and the reply it gives."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from turncheck.providers.base import ChatResponse, ProviderError, ToolCall
from turncheck.targets.usage import ModelCall

TURN_HEADER = "X-Turncheck-Turn"
"""The header an app with `forwards_header` copies onto the model calls of the turn."""
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The largest reply an app may give to one turn (what a provider's answer may be)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn as the app gets it."""

    messages: list[dict[str, str]]
    """The conversation so far (only the newest user message when `stateful`)."""
    last_message: str
    session_id: str | None
    vars: Mapping[str, str]
    turn_id: str | None = None
    """Sent as `X-Turncheck-Turn` when the app forwards it onto its model calls."""

    def context(self) -> dict[str, Any]:
        return {"messages": self.messages, "last_message": self.last_message,
                "session_id": self.session_id or "", "vars": dict(self.vars)}


@dataclass(frozen=True, slots=True)
class AppReply:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None
    """Tokens the app says it used (when its own calls do not go through the proxy)."""
    output_tokens: int | None = None
    session_id: str | None = None
    """The session id this reply hands out (`session: {from: ...}`)."""
    first_token_ms: float | None = None


@dataclass(frozen=True, slots=True)
class TargetResponse(ChatResponse):
    """The app's reply to one turn, with the model calls it made meanwhile."""

    calls: tuple[ModelCall, ...] = field(default=(), compare=False)
    app_tool_calls: bool = False
    """`tool_calls` are calls the app ran itself (reported), not requests to answer."""
    first_token_ms: float | None = None
    tokens_estimated: bool = False
    """Some of `calls` reported no usage: their tokens are estimated from the text."""


@dataclass
class Runtime:
    """What a started target has: its folder, port and the app's environment."""

    folder: Path
    env: dict[str, str]
    port: int | None
    proxy_urls: dict[str, str] = field(default_factory=dict)
    """The proxy's base URLs (`openai_base_url`, `anthropic_base_url`)."""


class TargetKind(Protocol):
    async def start(self, runtime: Runtime) -> None: ...

    async def answer(self, turn: Turn) -> AppReply: ...

    async def stop(self) -> None: ...


class TargetError(ProviderError):
    """The app gave no usable reply to a turn."""


class AppGone(TargetError):
    """The app could not be reached (it may have died): the target says why if it did."""


def at_path(value: Any, path: str) -> Any:
    """`a.b.0.c` in a JSON value (list items by index); None when absent."""
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def tool_calls_of(raw: Any) -> tuple[ToolCall, ...]:
    """The app's reported tool calls: `[{name, arguments}]` (OpenAI's `{function: {...}}`
    shape too); anything else is ignored."""
    if not isinstance(raw, list):
        return ()
    calls = []
    for index, item in enumerate(raw[:64]):
        if not isinstance(item, dict):
            continue
        nested = item.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else item
        name = function.get("name")
        if not isinstance(name, str):
            continue
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(ToolCall(str(item.get("id") or f"app_{index}"), name, text))
    return tuple(calls)


def reply_of(payload: Any) -> AppReply:
    """A python or command target's reply: text, or `{text, tool_calls, usage, session_id}`."""
    if isinstance(payload, str):
        return AppReply(payload)
    if not isinstance(payload, dict):
        raise TargetError(f"the app's reply must be text or an object with text, "
                          f"not {type(payload).__name__}")
    if isinstance(payload.get("error"), str) and "text" not in payload:
        raise TargetError(str(payload["error"])[:2000])
    text = next((payload[k] for k in ("text", "reply", "content") if k in payload), None)
    if not isinstance(text, str):
        raise TargetError("the app's reply object has no text (expected a string under "
                          '"text")')
    given = payload.get("usage")
    usage: dict[str, Any] = given if isinstance(given, dict) else {}
    session = payload.get("session_id")
    return AppReply(text, tool_calls_of(payload.get("tool_calls")),
                    _count(usage.get("input_tokens")), _count(usage.get("output_tokens")),
                    session if isinstance(session, str) else None)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None
