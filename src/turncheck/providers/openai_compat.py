"""OpenAI-compatible chat completions and embeddings (OpenAI, OpenRouter, vLLM, Ollama, ...)."""

from __future__ import annotations

from collections.abc import Mapping

from turncheck.choices import price_id
from turncheck.providers.base import (
    AnswerSchema,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    ProviderError,
    ToolCall,
)
from turncheck.providers.common import Connection, dig, token_count, well_formed
from turncheck.providers.http import JsonObject, JsonResult
from turncheck.providers.structured import first_accepted
from turncheck.providers.urls import host_of
from turncheck.text.credentials import PROVIDER_KEY_ENV

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatProvider:
    """`POST {base_url}/chat/completions` and `POST {base_url}/embeddings`."""

    def __init__(
        self,
        connection: Connection,
        *,
        name: str,
        base_url: str,
        key_env: str,
        key_required: bool,
        price_provider_id: str | None,
        extra_headers: Mapping[str, str] | None = None,
        token_limit_field: str = "max_tokens",
        key_header: str = "authorization",
        query: str = "",
        unusable: str | None = None,
    ) -> None:
        """`key_header` carries the key (`authorization: Bearer KEY`, or Azure's
        `api-key: KEY`); `query` is appended to every URL (Azure's `?api-version=…`);
        `unusable` says why no request can be sent (reported by each call)."""
        self.name = name
        self.token_limit_field = token_limit_field
        """OpenAI's own API takes `max_completion_tokens` (its current models reject
        `max_tokens`); other OpenAI-compatible servers know `max_tokens`."""
        self.price_provider_id = price_provider_id
        self.base_url = base_url.rstrip("/")
        self._key = connection.api_key(key_env, name, required=key_required)
        self._headers = dict(extra_headers or {})
        if self._key.value:
            bearer = key_header == "authorization"
            self._headers[key_header] = f"Bearer {self._key.value}" if bearer else self._key.value
        self._query = query
        self._unusable = unusable
        self._http = connection.http_client(name, self._key)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        result = await first_accepted(
            chat_bodies(request, self.token_limit_field),
            lambda body: self._post("/chat/completions", body),
        )
        usage = result.body.get("usage")
        return ChatResponse(
            text=well_formed(self._reply_text(result.body)),
            input_tokens=token_count(dig(usage, "prompt_tokens")),
            output_tokens=token_count(dig(usage, "completion_tokens")),
            latency_ms=result.latency_ms,
            replayed=result.replayed,
            model=_str_or_none(result.body.get("model")),
            tool_calls=reply_tool_calls(result.body),
            reasoning_tokens=token_count(dig(usage, "completion_tokens_details",
                                             "reasoning_tokens")),
            cached_input_tokens=token_count(dig(usage, "prompt_tokens_details",
                                                "cached_tokens")),
        )

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse:
        result = await self._post("/embeddings", {"model": model, "input": inputs})
        return EmbeddingResponse(
            vectors=self._vectors(result.body, len(inputs)),
            input_tokens=token_count(dig(result.body, "usage", "prompt_tokens")),
            replayed=result.replayed,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, path: str, body: JsonObject) -> JsonResult:
        if self._unusable is not None:
            raise ProviderError(self._unusable)
        extensions = self._key.request_extensions()
        usable = chat_problem if path == "/chat/completions" else None
        return await self._http.post_json(
            self.base_url + path + self._query, body, self._headers, extensions=extensions,
            usable=usable,
        )

    def _reply_text(self, body: JsonObject) -> str:
        problem = chat_problem(body)
        if problem is not None:
            raise self._http.unexpected(problem)
        content = dig(body, "choices", 0, "message", "content")
        if isinstance(content, str):
            return content
        refusal = dig(body, "choices", 0, "message", "refusal")  # the model's answer, too
        return refusal if isinstance(refusal, str) else ""

    def _vectors(self, body: JsonObject, expected: int) -> list[list[float]]:
        data = body.get("data")
        if not isinstance(data, list) or len(data) != expected:
            raise self._http.unexpected(f"expected {expected} embeddings in `data`")
        items = sorted(data, key=_index)
        return [self._vector(item) for item in items]

    def _vector(self, item: object) -> list[float]:
        vector = dig(item, "embedding")
        if isinstance(vector, list) and vector and all(_is_vector(v) for v in vector):
            return _mean_pooled(vector)
        if not isinstance(vector, list) or not all(_is_number(v) for v in vector):
            raise self._http.unexpected("an embedding is not a list of numbers")
        return [float(v) for v in vector]


def chat_bodies(request: ChatRequest, token_field: str = "max_tokens") -> list[JsonObject]:
    """The request forms to try, best first (see `turncheck.providers.structured`).

    With an answer schema: OpenAI's `json_schema` response format (OpenAI, OpenRouter,
    vLLM, Ollama, llama.cpp's own server), then llama-cpp-python's `json_object` with
    a `schema` (it turns the schema into a grammar), then a plain JSON-object request.
    """
    if request.answer_schema is None:
        return [chat_body(request, token_field=token_field)]
    return [
        chat_body(request, _json_schema_format(request.answer_schema), token_field),
        chat_body(request, {"type": "json_object", "schema": request.answer_schema.schema},
                  token_field),
        chat_body(request, {"type": "json_object"}, token_field),
    ]


def _json_schema_format(answer: AnswerSchema) -> JsonObject:
    """OpenAI's strict structured output, which refuses length keywords: they are dropped."""
    return {
        "type": "json_schema",
        "json_schema": {"name": answer.name, "strict": True, "schema": _strict(answer.schema)},
    }


def _strict(schema: object) -> object:
    if isinstance(schema, dict):
        return {k: _strict(v) for k, v in schema.items() if k not in _UNSUPPORTED_IN_STRICT}
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


_UNSUPPORTED_IN_STRICT = frozenset({"minLength", "maxLength"})


def chat_body(request: ChatRequest, response_format: JsonObject | None = None,
              token_field: str = "max_tokens") -> JsonObject:
    body: JsonObject = {
        "model": request.model,
        "messages": [message_json(m) for m in request.messages],
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_output_tokens is not None:
        body[token_field] = request.max_output_tokens
    if request.seed is not None:
        body["seed"] = request.seed
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    if request.tools:
        body["tools"] = list(request.tools)
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
    if response_format is not None:
        body["response_format"] = response_format
    elif request.json_object:
        body["response_format"] = {"type": "json_object"}
    return body


def message_json(message: ChatMessage) -> JsonObject:
    """A message in OpenAI's chat format: an assistant's tool calls and a tool's result
    included."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "",
                "content": message.content}
    if not message.tool_calls:
        return {"role": message.role, "content": message.content}
    calls = [{"id": call.id, "type": "function",
              "function": {"name": call.name, "arguments": call.arguments}}
             for call in message.tool_calls]
    return {"role": message.role, "content": message.content or None, "tool_calls": calls}


def reply_tool_calls(body: JsonObject) -> tuple[ToolCall, ...]:
    """The function calls of `choices[0].message` (checked by `chat_problem`)."""
    calls = dig(body, "choices", 0, "message", "tool_calls")
    if not isinstance(calls, list):
        return ()
    return tuple(
        ToolCall(id=str(dig(call, "id")), name=str(dig(call, "function", "name")),
                 arguments=str(dig(call, "function", "arguments")))
        for call in calls
    )


def chat_problem(body: JsonObject) -> str | None:
    """Why `body` holds no usable chat completion, or None when it does."""
    message = dig(body, "choices", 0, "message")
    if not isinstance(message, dict):
        return _missing_choice_detail(body)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "choices[0].message.content is not a string"
    return _tool_calls_problem(message.get("tool_calls"))


def _tool_calls_problem(calls: object) -> str | None:
    if calls is None:
        return None
    if not isinstance(calls, list):
        return "choices[0].message.tool_calls is not a list"
    for index, call in enumerate(calls):
        where = f"choices[0].message.tool_calls[{index}]"
        if not isinstance(dig(call, "id"), str):
            return f"{where} has no string id"
        if dig(call, "type") not in (None, "function"):
            return f"{where} is not a function call"
        if not isinstance(dig(call, "function", "name"), str):
            return f"{where} has no function name"
        if not isinstance(dig(call, "function", "arguments"), str):
            return f"{where}.function.arguments is not a string"
    return None


def _missing_choice_detail(body: JsonObject) -> str:
    error = dig(body, "error", "message")
    if isinstance(error, str):
        return f"error in body: {error}"
    return "no choices[0].message"


def _index(item: object) -> int:
    index = dig(item, "index")
    return index if isinstance(index, int) else 0


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _is_vector(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_number(v) for v in value)


def _mean_pooled(token_vectors: list[list[float]]) -> list[float]:
    """One vector per token (llama.cpp without pooling) → their mean, like mean pooling."""
    width = len(token_vectors[0])
    if any(len(v) != width for v in token_vectors):
        raise ProviderError("token embeddings have different lengths")
    return [sum(column) / len(token_vectors) for column in zip(*token_vectors, strict=True)]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def openrouter(connection: Connection) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        connection,
        name="openrouter",
        base_url=connection.base_url or OPENROUTER_BASE_URL,
        key_env=PROVIDER_KEY_ENV["openrouter"],
        key_required=True,
        price_provider_id=price_id("openrouter", None),
        # OpenRouter's app attribution headers; not part of cassette matching.
        extra_headers={"x-title": "turncheck"},
    )


def openai_compatible(connection: Connection) -> OpenAICompatProvider:
    """OpenAI itself, or a local server (no key needed) when the base URL points elsewhere."""
    url = connection.base_url or connection.env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    url = url.rstrip("/")
    is_openai = host_of(url) == "api.openai.com"
    return OpenAICompatProvider(
        connection,
        name="openai",
        base_url=url,
        key_env=PROVIDER_KEY_ENV["openai"],
        key_required=is_openai,
        price_provider_id=price_id("openai", url),
        token_limit_field="max_completion_tokens" if is_openai else "max_tokens",
    )


AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI data-plane API version sent when AZURE_OPENAI_API_VERSION is unset
(the latest GA version with tools, structured output and `max_completion_tokens`)."""
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai"


def azure_openai(connection: Connection) -> OpenAICompatProvider:
    """Azure OpenAI: a deployment URL (`https://RESOURCE.openai.azure.com/openai/deployments/
    DEPLOYMENT`) with `?api-version=…`, or the v1 API (`…/openai/v1`, no version); the key
    goes in the `api-key` header."""
    url = (connection.base_url or connection.env.get("AZURE_OPENAI_BASE_URL") or "").rstrip("/")
    version = connection.env.get("AZURE_OPENAI_API_VERSION") or AZURE_API_VERSION
    query = "" if url.endswith("/openai/v1") else f"?api-version={version}"
    return OpenAICompatProvider(
        connection,
        name="azure",
        base_url=url,
        key_env=PROVIDER_KEY_ENV["azure"],
        key_required=True,
        price_provider_id=price_id("azure", None),
        token_limit_field="max_completion_tokens",
        key_header="api-key",
        query=query,
        unusable=None if url else "azure needs base_url: the deployment URL, https://"
        "RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT (or AZURE_OPENAI_BASE_URL)",
    )


def gemini(connection: Connection) -> OpenAICompatProvider:
    """Google Gemini through its OpenAI-compatible endpoint, with GEMINI_API_KEY."""
    return OpenAICompatProvider(
        connection,
        name="gemini",
        base_url=connection.base_url or GEMINI_BASE_URL,
        key_env=PROVIDER_KEY_ENV["gemini"],
        key_required=True,
        price_provider_id=price_id("gemini", None),
    )

