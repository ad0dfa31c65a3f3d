"""Contract tests against the providers' own definitions (issue 24).

Every request body turncheck sends (chat, tools and tool results, structured output,
judge, reasoning settings, embeddings; OpenAI and Anthropic) is captured from the real
provider code and validated against the official SDKs' request TypedDicts, with unknown
keys forbidden at every level; response fixtures (tool calls, parallel calls, refusals,
reasoning and cache usage; tests/fixtures/provider_api/, written from the API references)
are parsed by the SDKs' response models and by turncheck, which must read the same
calls, text and token counts. A drift from the real APIs fails here.

The SDKs are test-only dependencies (the `test` extra).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typing_extensions
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.embedding_create_params import EmbeddingCreateParams
from pydantic import ConfigDict, TypeAdapter, ValidationError

from turncheck.engine.judge import GRADE_ANSWER, VERDICT_ANSWER
from turncheck.providers.anthropic import request_bodies
from turncheck.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    Provider,
    ToolCall,
)
from turncheck.providers.factory import make_provider
from turncheck.providers.openai_compat import chat_bodies

FIXTURES = Path(__file__).parents[1] / "fixtures" / "provider_api"
KEYS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
BARE_TOOL = {"type": "function", "function": {"name": "get_time"}}
HISTORY = [
    ChatMessage("system", "You are a weather assistant."),
    ChatMessage("user", "Weather and time in Paris?"),
    ChatMessage("assistant", "", tool_calls=(
        ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
        ToolCall("call_2", "get_time", "{}"))),
    ChatMessage("tool", '{"forecast": "sunny"}', tool_call_id="call_1"),
    ChatMessage("tool", "12:00", tool_call_id="call_2"),
    ChatMessage("assistant", "Sunny, and it is noon."),
    ChatMessage("user", "And tomorrow?"),
    ChatMessage("assistant", "Let me check.", tool_calls=(
        ToolCall("call_3", "get_weather", '{"city": "Paris", "day": "tomorrow"}'),)),
    ChatMessage("tool", "rain", tool_call_id="call_3"),
]
CHOICES: list[str | dict[str, Any] | None] = [
    None, "auto", "none", "required", {"type": "function", "function": {"name": "get_weather"}}]


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def forbid_unknown_keys(root: Any, seen: set[int] | None = None) -> None:
    """Make every TypedDict reachable from `root` reject keys it does not declare (the
    SDKs' TypedDicts are open by default, which would let a misspelt field through)."""
    seen = set() if seen is None else seen
    if id(root) in seen:
        return
    seen.add(id(root))
    if isinstance(root, type) and typing_extensions.is_typeddict(root):
        root.__pydantic_config__ = ConfigDict(  # type: ignore[attr-defined]
            extra="forbid", arbitrary_types_allowed=True)
        for hint in typing_extensions.get_type_hints(root, include_extras=True).values():
            forbid_unknown_keys(hint, seen)
        return
    for argument in typing_extensions.get_args(root):
        forbid_unknown_keys(argument, seen)


def consumed(value: Any) -> Any:
    """`value` with every lazily validated iterable (the SDKs' `Iterable[...]` fields)
    walked, so that each of their items is validated too."""
    if isinstance(value, dict):
        return {key: consumed(item) for key, item in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [consumed(item) for item in value]
    return value


class SdkType:
    def __init__(self, typed_dict: Any) -> None:
        forbid_unknown_keys(typed_dict)
        self.adapter: TypeAdapter[Any] = TypeAdapter(typed_dict)

    def check(self, body: dict[str, Any]) -> None:
        consumed(self.adapter.validate_python(body))


@pytest.fixture(scope="module")
def openai_chat_type() -> SdkType:
    return SdkType(CompletionCreateParamsNonStreaming)


@pytest.fixture(scope="module")
def anthropic_messages_type() -> SdkType:
    return SdkType(MessageCreateParamsNonStreaming)


def sent_bodies(provider_name: str, call: Callable[[Provider], Any], reply: dict[str, Any],
                base_url: str | None = None) -> list[dict[str, Any]]:
    """The JSON bodies `call(provider)` sends (to the provider's own API; answered in memory
    with `reply`, never over the network)."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=reply)

    async def run() -> None:
        provider = make_provider(provider_name, env=KEYS, base_url=base_url,
                                 transport=httpx.MockTransport(handler))
        try:
            await call(provider)
        finally:
            await provider.aclose()

    asyncio.run(run())
    return bodies


def chat_requests() -> Iterator[ChatRequest]:
    """Every shape of chat request the engine builds: eval turns (plain, with tools and
    tool history, each tool_choice, reasoning settings) and judge/grader calls."""
    yield ChatRequest(model="gpt-4o-mini", messages=HISTORY[:2], temperature=0.2,
                      max_output_tokens=256, seed=7)
    yield ChatRequest(model="o4-mini", messages=HISTORY[:2], max_output_tokens=2048,
                      reasoning_effort="low")
    for choice in CHOICES:
        yield ChatRequest(model="gpt-4.1-mini", messages=HISTORY, max_output_tokens=512,
                          tools=(WEATHER_TOOL, BARE_TOOL), tool_choice=choice, seed=1)
    for schema in (VERDICT_ANSWER, GRADE_ANSWER):
        yield ChatRequest(model="gpt-4o-mini", messages=HISTORY[:2], temperature=0,
                          max_output_tokens=256, json_object=True, answer_schema=schema)
    yield ChatRequest(model="gpt-4o-mini", messages=HISTORY[:2], json_object=True)


def test_every_openai_chat_body_is_a_valid_sdk_request(openai_chat_type: SdkType) -> None:
    checked = 0
    for request in chat_requests():
        sent = sent_bodies("openai", lambda p, r=request: p.chat(r),
                           fixture("openai_reasoning_usage.json"))
        openai_forms = chat_bodies(request, "max_completion_tokens")
        # The second structured form (`json_object` with a `schema`) is llama-cpp-python's
        # extension, sent only after a server refused OpenAI's own `json_schema` form.
        extension = [body for body in openai_forms if "schema" in body.get(
            "response_format", {})]
        for body in [*sent, *(b for b in openai_forms if b not in extension)]:
            openai_chat_type.check(body)
            assert "max_tokens" not in body
            checked += 1
        for body in extension:
            with pytest.raises(ValidationError):
                openai_chat_type.check(body)
    assert checked >= 12


def test_the_sdk_types_catch_a_drift(openai_chat_type: SdkType,
                                     anthropic_messages_type: SdkType) -> None:
    """The checks can fail: bodies as they would be with a misspelt or wrongly shaped field."""
    good = chat_bodies(ChatRequest(model="gpt-4.1", messages=HISTORY, tools=(WEATHER_TOOL,)),
                       "max_completion_tokens")[0]
    drifts = [
        {**good, "max_output_tokens": 5},
        {**good, "messages": [*good["messages"], {"role": "tool", "content": "no id"}]},
        {**good, "tools": [{"type": "function", "name": "flat"}]},
        {**good, "messages": [{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]},
    ]
    for body in drifts:
        with pytest.raises(ValidationError):
            openai_chat_type.check(body)
    anthropic = request_bodies(ChatRequest(model="claude-x", messages=HISTORY))[0]
    with pytest.raises(ValidationError):
        anthropic_messages_type.check({**anthropic, "messages": [
            {"role": "tool", "content": "openai-style"}]})


def test_every_anthropic_messages_body_is_a_valid_sdk_request(
    anthropic_messages_type: SdkType
) -> None:
    checked = 0
    for request in chat_requests():
        sent = sent_bodies("anthropic", lambda p, r=request: p.chat(r),
                           fixture("anthropic_tool_use.json"))
        for body in [*sent, *request_bodies(request)]:
            anthropic_messages_type.check(body)
            checked += 1
    assert checked >= 20


def test_embedding_requests_are_valid_sdk_requests() -> None:
    sdk = SdkType(EmbeddingCreateParams)

    async def embed(provider: Provider) -> EmbeddingResponse:
        return await provider.embed("text-embedding-3-small", ["a", "b"])

    [body] = sent_bodies("openai", embed, fixture("openai_embeddings.json"))
    sdk.check(body)


def openai_reply(name: str) -> tuple[ChatCompletion, ChatResponse]:
    data = fixture(name)
    parsed: list[ChatResponse] = []

    async def chat(provider: Provider) -> None:
        parsed.append(await provider.chat(ChatRequest(model="gpt-4o", messages=HISTORY[:2])))

    sent_bodies("openai", chat, data)
    return ChatCompletion.model_validate(data), parsed[0]


@pytest.mark.parametrize("name", ["openai_tool_calls.json", "openai_parallel_tool_calls.json",
                                  "openai_refusal.json", "openai_reasoning_usage.json"])
def test_openai_responses_read_as_the_sdk_reads_them(name: str) -> None:
    sdk, ours = openai_reply(name)
    message = sdk.choices[0].message
    calls = [(c.id, c.function.name, c.function.arguments)  # type: ignore[union-attr]
             for c in message.tool_calls or ()]
    assert [(c.id, c.name, c.arguments) for c in ours.tool_calls] == calls
    assert ours.text == (message.content or message.refusal or "")
    assert sdk.usage is not None
    assert (ours.input_tokens, ours.output_tokens) == (sdk.usage.prompt_tokens,
                                                       sdk.usage.completion_tokens)
    details = sdk.usage.completion_tokens_details
    assert ours.reasoning_tokens == (details.reasoning_tokens if details else None)
    cached = sdk.usage.prompt_tokens_details
    assert ours.cached_input_tokens == (cached.cached_tokens if cached else None)


def test_the_refusal_is_the_answer_checks_see() -> None:
    _, ours = openai_reply("openai_refusal.json")
    assert ours.text == "I'm sorry, I can't help with that request."


@pytest.mark.parametrize("name", ["anthropic_tool_use.json", "anthropic_parallel_tool_use.json",
                                  "anthropic_refusal.json"])
def test_anthropic_responses_read_as_the_sdk_reads_them(name: str) -> None:
    data = fixture(name)
    sdk = Message.model_validate(data)
    parsed: list[ChatResponse] = []

    async def chat(provider: Provider) -> None:
        parsed.append(await provider.chat(ChatRequest(model="claude-x", messages=HISTORY[:2])))

    sent_bodies("anthropic", chat, data)
    [ours] = parsed
    uses = [(b.id, b.name, b.input) for b in sdk.content if b.type == "tool_use"]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in ours.tool_calls] == uses
    assert ours.text == "".join(b.text for b in sdk.content if b.type == "text")
    cache_read = sdk.usage.cache_read_input_tokens or 0
    cache_write = sdk.usage.cache_creation_input_tokens or 0
    assert ours.input_tokens == sdk.usage.input_tokens + cache_read + cache_write
    assert ours.output_tokens == sdk.usage.output_tokens
    assert ours.cached_input_tokens == sdk.usage.cache_read_input_tokens


def test_embedding_responses_read_as_the_sdk_reads_them() -> None:
    data = fixture("openai_embeddings.json")
    sdk = CreateEmbeddingResponse.model_validate(data)
    parsed: list[EmbeddingResponse] = []

    async def embed(provider: Provider) -> None:
        parsed.append(await provider.embed("text-embedding-3-small", ["a", "b"]))

    sent_bodies("openai", embed, data)
    by_index = sorted(sdk.data, key=lambda item: item.index)
    assert parsed[0].vectors == [item.embedding for item in by_index]
    assert parsed[0].input_tokens == sdk.usage.prompt_tokens
