"""Anthropic's Messages API (`POST {base_url}/messages`)."""

from __future__ import annotations

import json
from typing import Any

from turncheck.choices import price_id
from turncheck.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ProviderError,
    ToolCall,
)
from turncheck.providers.common import Connection, dig, token_count, well_formed
from turncheck.providers.http import JsonObject
from turncheck.providers.structured import first_accepted
from turncheck.text.credentials import PROVIDER_KEY_ENV

ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens
ANTHROPIC_EFFORTS = ("low", "medium", "high")
"""`reasoning_effort` values sent as the Messages API's `output_config.effort`."""


class AnthropicProvider:
    """Chat only: Anthropic has no embeddings endpoint. `seed` is not supported and ignored."""

    name = "anthropic"
    price_provider_id: str | None = price_id("anthropic", None)

    def __init__(self, connection: Connection) -> None:
        self.base_url = (connection.base_url or _env_base_url(connection)
                         or ANTHROPIC_BASE_URL).rstrip("/")
        self._key = connection.api_key(PROVIDER_KEY_ENV["anthropic"], self.name, required=True)
        self._headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._key.value:
            self._headers["x-api-key"] = self._key.value
        self._http = connection.http_client(self.name, self._key)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        result = await first_accepted(
            request_bodies(request),
            lambda body: self._http.post_json(
                self.base_url + "/messages",
                body,
                self._headers,
                extensions=self._key.request_extensions(),
                usable=messages_problem,
            ),
        )
        model = result.body.get("model")
        answering_tool = request.answer_schema is not None
        usage = result.body.get("usage")
        cached = token_count(dig(usage, "cache_read_input_tokens"))
        return ChatResponse(
            text=well_formed(self._reply_text(result.body, answering_tool)),
            input_tokens=_input_tokens(usage),
            output_tokens=token_count(dig(usage, "output_tokens")),
            latency_ms=result.latency_ms,
            replayed=result.replayed,
            model=model if isinstance(model, str) else None,
            tool_calls=() if answering_tool else reply_tool_calls(result.body),
            cached_input_tokens=cached,
        )

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse:
        raise ProviderError(
            "anthropic has no embeddings API; set embedding_model to an OpenAI-compatible "
            "or OpenRouter model"
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _reply_text(self, body: JsonObject, answering_tool: bool) -> str:
        problem = messages_problem(body)
        if problem is not None:
            raise self._http.unexpected(problem)
        blocks = body.get("content")
        assert isinstance(blocks, list)
        tool_inputs = [dig(b, "input") for b in blocks if dig(b, "type") == "tool_use"]
        if answering_tool and tool_inputs and isinstance(tool_inputs[0], dict):
            return json.dumps(tool_inputs[0])  # the forced answer tool's arguments
        texts = [dig(block, "text") for block in blocks if dig(block, "type") == "text"]
        return "".join(text for text in texts if isinstance(text, str))


def _env_base_url(connection: Connection) -> str | None:
    """`ANTHROPIC_BASE_URL`, as Anthropic's SDK reads it (the host; `/v1` is added), for a
    gateway or a local server speaking the Messages API."""
    url = connection.env.get("ANTHROPIC_BASE_URL")
    return url.rstrip("/") + "/v1" if url else None


def messages_problem(body: JsonObject) -> str | None:
    """Why `body` holds no usable Messages answer, or None when it does."""
    blocks = body.get("content")
    if not isinstance(blocks, list):
        return "no `content` list"
    for index, block in enumerate(blocks):
        if dig(block, "type") == "tool_use" and not (
                isinstance(dig(block, "id"), str) and isinstance(dig(block, "name"), str)
                and isinstance(dig(block, "input"), dict)):
            return f"content[{index}] is a tool_use block without id, name or input object"
    return None


def _input_tokens(usage: object) -> int | None:
    """All input tokens: Anthropic counts cache reads and writes apart from `input_tokens`."""
    uncached = token_count(dig(usage, "input_tokens"))
    if uncached is None:
        return None
    cache = [token_count(dig(usage, key)) for key in
             ("cache_read_input_tokens", "cache_creation_input_tokens")]
    return uncached + sum(count or 0 for count in cache)


def reply_tool_calls(body: JsonObject) -> tuple[ToolCall, ...]:
    """The answer's `tool_use` blocks as calls (their input as JSON text)."""
    blocks = body.get("content")
    return tuple(
        ToolCall(id=str(dig(b, "id")), name=str(dig(b, "name")),
                 arguments=json.dumps(dig(b, "input"), ensure_ascii=False))
        for b in blocks or () if dig(b, "type") == "tool_use"
    ) if isinstance(blocks, list) else ()


def request_bodies(request: ChatRequest) -> list[JsonObject]:
    """The request forms to try, best first: with an answer schema, a forced call of a
    tool whose input schema is the answer's, then the plain request (prompt-and-parse)."""
    plain = messages_body(request)
    answer = request.answer_schema
    if answer is None:
        return [plain]
    tool = {
        "name": answer.name,
        "description": "Give your answer by calling this tool.",
        "input_schema": answer.schema,
    }
    forced = {**plain, "tools": [tool], "tool_choice": {"type": "tool", "name": answer.name}}
    return [forced, plain]


def messages_body(request: ChatRequest) -> JsonObject:
    """System messages go to the top-level `system` field, joined by blank lines; tools
    and tool calls are mapped from OpenAI's format (see `anthropic_messages`)."""
    system = [m.content for m in request.messages if m.role == "system"]
    max_tokens = request.max_output_tokens
    body: JsonObject = {
        "model": request.model,
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        "messages": anthropic_messages([m for m in request.messages if m.role != "system"]),
    }
    if system:
        body["system"] = "\n\n".join(system)
    # No `temperature`: the Messages API as Anthropic's SDK defines it today has none.
    effort = request.reasoning_effort
    if effort in ANTHROPIC_EFFORTS:
        body["output_config"] = {"effort": effort}
    if request.tools:
        body["tools"] = [anthropic_tool(tool) for tool in request.tools]
        choice = anthropic_tool_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    return body


def anthropic_tool(tool: dict[str, Any]) -> JsonObject:
    """An OpenAI function tool as an Anthropic tool (`parameters` → `input_schema`)."""
    function = tool.get("function") or {}
    out: JsonObject = {"name": function.get("name"),
                       "input_schema": function.get("parameters") or EMPTY_INPUT_SCHEMA}
    if function.get("description"):
        out["description"] = function["description"]
    return out


EMPTY_INPUT_SCHEMA: JsonObject = {"type": "object", "properties": {}}


def anthropic_tool_choice(choice: str | dict[str, Any] | None) -> JsonObject | None:
    """OpenAI's auto / required / none / forced function as Anthropic's auto / any / none /
    tool."""
    if choice is None:
        return None
    if isinstance(choice, dict):
        return {"type": "tool", "name": dig(choice, "function", "name")}
    return {"type": {"required": "any"}.get(choice, choice)}


def anthropic_messages(messages: list[ChatMessage]) -> list[JsonObject]:
    """User and assistant messages; an assistant's calls become `tool_use` blocks and the
    tool messages answering them one user message of `tool_result` blocks."""
    out: list[JsonObject] = []
    for message in messages:
        if message.role == "tool":
            block = {"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                     "content": message.content}
            previous = out[-1] if out else None
            if previous is not None and previous["role"] == "user" \
                    and isinstance(previous["content"], list):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.tool_calls:
            blocks: list[JsonObject] = [{"type": "text", "text": message.content}] \
                if message.content else []
            blocks += [{"type": "tool_use", "id": call.id, "name": call.name,
                        "input": _call_input(call)} for call in message.tool_calls]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _call_input(call: ToolCall) -> object:
    """A call's arguments as the `input` object Anthropic wants (they came from a reply,
    so they are a JSON object; anything else is sent back as its text)."""
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {"arguments": call.arguments}
    return value if isinstance(value, dict) else {"arguments": call.arguments}
