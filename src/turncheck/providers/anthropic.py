"""Anthropic's Messages API (`POST {base_url}/messages`)."""

from __future__ import annotations

import json

from turncheck.providers.base import (
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ProviderError,
)
from turncheck.providers.common import Connection, dig, token_count, well_formed
from turncheck.providers.http import JsonObject
from turncheck.providers.structured import first_accepted

ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024  # the Messages API requires max_tokens


class AnthropicProvider:
    """Chat only: Anthropic has no embeddings endpoint. `seed` is not supported and ignored."""

    name = "anthropic"
    price_provider_id: str | None = "anthropic"

    def __init__(self, connection: Connection) -> None:
        self.base_url = (connection.base_url or ANTHROPIC_BASE_URL).rstrip("/")
        self._key = connection.api_key("ANTHROPIC_API_KEY", self.name, required=True)
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
        return ChatResponse(
            text=well_formed(self._reply_text(result.body)),
            input_tokens=token_count(dig(result.body, "usage", "input_tokens")),
            output_tokens=token_count(dig(result.body, "usage", "output_tokens")),
            latency_ms=result.latency_ms,
            replayed=result.replayed,
            model=model if isinstance(model, str) else None,
        )

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse:
        raise ProviderError(
            "anthropic has no embeddings API; set embedding_model to an OpenAI-compatible "
            "or OpenRouter model"
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _reply_text(self, body: JsonObject) -> str:
        problem = messages_problem(body)
        if problem is not None:
            raise self._http.unexpected(problem)
        blocks = body.get("content")
        assert isinstance(blocks, list)
        tool_inputs = [dig(b, "input") for b in blocks if dig(b, "type") == "tool_use"]
        if tool_inputs and isinstance(tool_inputs[0], dict):
            return json.dumps(tool_inputs[0])  # the forced answer tool's arguments
        texts = [dig(block, "text") for block in blocks if dig(block, "type") == "text"]
        return "".join(text for text in texts if isinstance(text, str))


def messages_problem(body: JsonObject) -> str | None:
    """Why `body` holds no usable Messages answer, or None when it does."""
    return None if isinstance(body.get("content"), list) else "no `content` list"


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
    """System messages go to the top-level `system` field, joined by blank lines."""
    system = [m.content for m in request.messages if m.role == "system"]
    max_tokens = request.max_output_tokens
    body: JsonObject = {
        "model": request.model,
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        "messages": [
            {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
        ],
    }
    if system:
        body["system"] = "\n\n".join(system)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body
