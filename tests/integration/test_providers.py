"""Providers and retries against the scripted local server."""

from __future__ import annotations

import asyncio
import json
import math
import time
from datetime import UTC, datetime

import httpx
import pytest

from tests.support.provider_helpers import run
from tests.support.scripted_server import ScriptedServer
from turncheck.providers.base import ChatMessage, ChatRequest, ChatResponse, Provider, ProviderError
from turncheck.providers.factory import make_provider, select_provider
from turncheck.providers.http import RetryPolicy, Sleep, parse_retry_after

FAST = RetryPolicy(max_attempts=4, backoff_base=0.001, backoff_cap=0.005, timeout=2.0)
KEYS = {"OPENROUTER_API_KEY": "sk-or-test", "ANTHROPIC_API_KEY": "sk-ant-test"}


def openai_at(
    server: ScriptedServer, policy: RetryPolicy = FAST, sleep: Sleep | None = None
) -> Provider:
    return make_provider("openai", env={}, policy=policy, base_url=server.base_url, sleep=sleep)


def ask(text: str, model: str = "local-model", system: str | None = None) -> ChatRequest:
    messages = [ChatMessage("system", system)] if system else []
    return ChatRequest(model=model, messages=[*messages, ChatMessage("user", text)])


async def chat_once(provider: Provider, request: ChatRequest) -> ChatResponse:
    try:
        return await provider.chat(request)
    finally:
        await provider.aclose()


# -- parsing --


def test_openai_chat_parses_text_usage_and_sends_the_conversation(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.add_rule("105", contains="15 * 7", usage=(12, 3))
    request = ChatRequest(
        model="m",
        messages=[
            ChatMessage("system", "Be terse."),
            ChatMessage("user", "What is 15 * 7?"),
        ],
        temperature=0.0,
        max_output_tokens=50,
        seed=7,
    )
    response = run(lambda: chat_once(openai_at(scripted_server), request))
    assert response.text == "105"
    assert (response.input_tokens, response.output_tokens) == (12, 3)
    assert response.model == "m"
    assert response.latency_ms > 0
    (sent,) = scripted_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.json == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "What is 15 * 7?"},
        ],
        "temperature": 0.0,
        "max_tokens": 50,
        "seed": 7,
    }
    assert "authorization" not in {k.lower() for k in sent.headers}


def test_absent_usage_is_none() -> None:
    async def handler_test() -> None:
        def reply(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"choices": [{"message": {"content": None}}]})

        provider = make_provider(
            "openai",
            env={},
            policy=FAST,
            base_url="http://127.0.0.1:9/v1",
            transport=httpx.MockTransport(reply),
        )
        response = await chat_once(provider, ask("hi"))
        assert response.text == ""
        assert response.input_tokens is None
        assert response.output_tokens is None

    run(handler_test)


def test_openai_embeddings_are_deterministic_and_similar_texts_are_close(
    scripted_server: ScriptedServer,
) -> None:
    async def scenario() -> list[list[float]]:
        provider = openai_at(scripted_server)
        try:
            result = await provider.embed(
                "emb", ["the cat sat on the mat", "the cat sat on a mat", "quantum chromodynamics"]
            )
        finally:
            await provider.aclose()
        assert result.input_tokens == 14
        return result.vectors

    vectors = run(scenario)
    assert len(vectors) == 3 and all(len(v) == 64 for v in vectors)
    assert cosine(vectors[0], vectors[1]) > 0.8 > 0.3 > cosine(vectors[0], vectors[2])
    assert scripted_server.requests[0].json == {
        "model": "emb",
        "input": ["the cat sat on the mat", "the cat sat on a mat", "quantum chromodynamics"],
    }


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_anthropic_sends_system_top_level_and_parses_usage(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.add_rule("Hello there", usage=(20, 2))
    provider = make_provider("anthropic", env=KEYS, policy=FAST, base_url=scripted_server.base_url)
    request = ask("Hi", model="claude-3-5-haiku-latest", system="Be kind.")
    response = run(lambda: chat_once(provider, request))
    assert response.text == "Hello there"
    assert (response.input_tokens, response.output_tokens) == (20, 2)
    (sent,) = scripted_server.requests
    assert sent.path == "/v1/messages"
    assert sent.json == {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 1024,
        "system": "Be kind.",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"


def test_anthropic_has_no_embeddings() -> None:
    provider = make_provider("anthropic", env=KEYS, policy=FAST)

    async def scenario() -> None:
        try:
            await provider.embed("x", ["a"])
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError, match="no embeddings API"):
        run(scenario)


def test_missing_key_fails_at_call_time_not_construction() -> None:
    provider = make_provider("openrouter", env={}, policy=FAST)  # constructing is fine
    with pytest.raises(ProviderError, match="OPENROUTER_API_KEY is not set"):
        run(lambda: chat_once(provider, ask("hi", model="openai/gpt-4o-mini")))


def test_openai_key_required_only_for_api_openai_com() -> None:
    provider = make_provider("openai", env={}, policy=FAST)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY is not set"):
        run(lambda: chat_once(provider, ask("hi")))


# -- retries --


class SleepLog:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def test_429_retry_after_is_honoured_then_success(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(fault="rate_limit", retry_after="0.25", times=1)
    sleeps = SleepLog()
    provider = openai_at(scripted_server, sleep=sleeps)
    response = run(lambda: chat_once(provider, ask("hi")))
    assert response.text == "OK"
    assert sleeps.delays == [0.25]
    assert len(scripted_server.requests) == 2


def test_retry_after_is_capped(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(fault="rate_limit", retry_after="3600", times=1)
    sleeps = SleepLog()
    policy = RetryPolicy(backoff_base=0.001, retry_after_cap=1.5, timeout=2.0)
    run(lambda: chat_once(openai_at(scripted_server, policy, sleep=sleeps), ask("hi")))
    assert sleeps.delays == [1.5]


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:10 GMT", now) == 10.0
    assert parse_retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now) == 0.0
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after(None) is None


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    import random

    policy = RetryPolicy(backoff_base=0.5, backoff_cap=20.0)
    rng = random.Random(1)
    for retry in range(1, 10):
        ceiling = min(20.0, 0.5 * 2 ** (retry - 1))
        samples = [policy.backoff(retry, rng) for _ in range(200)]
        assert all(0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling * 0.8


@pytest.mark.parametrize("fault", ["server_error", "hang", "drop", "malformed"])
def test_transient_fault_then_success(scripted_server: ScriptedServer, fault: str) -> None:
    scripted_server.add_rule(fault=fault, times=1)  # type: ignore[arg-type]
    policy = RetryPolicy(backoff_base=0.001, backoff_cap=0.005, timeout=0.3)
    response = run(lambda: chat_once(openai_at(scripted_server, policy), ask("hi")))
    assert response.text == "OK"
    assert len(scripted_server.requests) == 2


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("server_error", r"HTTP 500 after 4 attempts: scripted internal error"),
        ("rate_limit", r"HTTP 429 after 4 attempts: rate limited"),
        ("hang", r"timed out after 4 attempts"),
        ("drop", r"connection error after 4 attempts: RemoteProtocolError"),
    ],
)
def test_exhausted_attempts_name_the_reason(
    scripted_server: ScriptedServer, fault: str, message: str
) -> None:
    scripted_server.add_rule(fault=fault)  # type: ignore[arg-type]
    policy = RetryPolicy(backoff_base=0.001, backoff_cap=0.005, timeout=0.3)
    with pytest.raises(ProviderError, match=message) as caught:
        run(lambda: chat_once(openai_at(scripted_server, policy), ask("hi")))
    assert caught.value.message.startswith(f"openai request to {scripted_server.base_url}")
    assert len(scripted_server.requests) == 4


def test_malformed_json_is_retried_once(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(fault="malformed")
    with pytest.raises(
        ProviderError, match=r"malformed JSON in HTTP 200 response after 2 attempts"
    ):
        run(lambda: chat_once(openai_at(scripted_server), ask("hi")))
    assert len(scripted_server.requests) == 2


def test_400_fails_immediately_with_the_provider_message(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(fault="bad_request")
    with pytest.raises(ProviderError, match="HTTP 400: scripted bad request") as caught:
        run(lambda: chat_once(openai_at(scripted_server), ask("hi")))
    assert caught.value.status_code == 400
    assert len(scripted_server.requests) == 1


def test_error_messages_never_contain_the_api_key() -> None:
    key = "sk-test-SECRET123"

    def echo_key(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": f"Incorrect API key: {key}"}})

    provider = make_provider(
        "openai",
        env={"OPENAI_API_KEY": key},
        policy=FAST,
        transport=httpx.MockTransport(echo_key),
    )
    with pytest.raises(ProviderError, match="HTTP 401: Incorrect API key: <SECRET>") as caught:
        run(lambda: chat_once(provider, ask("hi")))
    assert key not in str(caught.value)


def test_secret_values_are_kept_out_of_error_messages() -> None:
    secret = "hunter2-TOPSECRET"

    def echo_prompt(request: httpx.Request) -> httpx.Response:
        prompt = json.loads(request.content)["messages"][0]["content"]
        return httpx.Response(400, json={"error": {"message": f"bad prompt: {prompt}"}})

    provider = make_provider(
        "openai",
        env={},
        base_url="http://local.test/v1",
        transport=httpx.MockTransport(echo_prompt),
        secrets=[secret],
    )
    with pytest.raises(ProviderError) as caught:
        run(lambda: chat_once(provider, ask(f"the password is {secret}")))
    assert caught.value.message.endswith("HTTP 400: bad prompt: the password is <SECRET>")


def test_retry_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="timeout"):
        RetryPolicy(timeout=0)


def test_concurrent_requests_with_faults_end_ok_or_provider_error(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.set_faults(
        0.2, ("rate_limit", "server_error", "malformed", "drop", "hang"), seed=3
    )
    scripted_server.add_rule(lambda body: body["messages"][-1]["content"].upper())
    policy = RetryPolicy(backoff_base=0.001, backoff_cap=0.01, timeout=0.5)
    provider = openai_at(scripted_server, policy)

    async def scenario() -> list[ChatResponse | BaseException]:
        try:
            calls = [provider.chat(ask(f"question {i}")) for i in range(200)]
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            await provider.aclose()

    results = run(scenario)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(e, ProviderError) for e in errors), {type(e) for e in errors}
    ok = [r for r in results if isinstance(r, ChatResponse)]
    assert len(ok) > 150
    assert all(r.text.startswith("QUESTION ") for r in ok)


# -- selection --


@pytest.mark.parametrize(
    ("model", "provider", "base_url", "expected"),
    [
        ("openai/gpt-4o-mini", None, None, ("openrouter", "openai/gpt-4o-mini")),
        ("anthropic/claude-3.5-sonnet", None, None, ("openrouter", "anthropic/claude-3.5-sonnet")),
        ("meta-llama/llama-3-8b:free", None, None, ("openrouter", "meta-llama/llama-3-8b:free")),
        ("gpt-4o-mini", None, None, ("openai", "gpt-4o-mini")),
        ("llama3:8b", None, None, ("openai", "llama3:8b")),
        ("anthropic:claude-3-5-haiku-latest", None, None, ("anthropic", "claude-3-5-haiku-latest")),
        ("openai:gpt-4o", None, None, ("openai", "gpt-4o")),
        ("Qwen/Qwen2.5-7B", None, "http://localhost:8000/v1", ("openai", "Qwen/Qwen2.5-7B")),
        ("claude-3-5-haiku-latest", "anthropic", None, ("anthropic", "claude-3-5-haiku-latest")),
        ("gpt-4o-mini", "openrouter", None, ("openrouter", "gpt-4o-mini")),
        ("anthropic:claude-x", "anthropic", None, ("anthropic", "claude-x")),
    ],
)
def test_select_provider(
    model: str, provider: str | None, base_url: str | None, expected: tuple[str, str]
) -> None:
    assert select_provider(model, provider, base_url) == expected


def test_unknown_provider_is_a_clear_error() -> None:
    with pytest.raises(ProviderError, match="unknown provider 'cohere'"):
        select_provider("x", "cohere", None)


def test_provider_attributes() -> None:
    openrouter = make_provider("openrouter", env=KEYS)
    openai = make_provider("openai", env={})
    local = make_provider("openai", env={}, base_url="http://127.0.0.1:1/v1")
    anthropic = make_provider("anthropic", env=KEYS)
    assert (openrouter.name, openrouter.price_provider_id) == ("openrouter", "openrouter")
    assert (openai.name, openai.price_provider_id) == ("openai", "openai")
    assert (local.name, local.price_provider_id) == ("openai", None)
    assert (anthropic.name, anthropic.price_provider_id) == ("anthropic", "anthropic")
    for provider in (openrouter, openai, local, anthropic):
        assert isinstance(provider, Provider)
        run(provider.aclose)


# -- the scripted server itself --


def test_scripted_server_latency_does_not_serialize_requests(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.set_latency(0.2)
    provider = openai_at(scripted_server)

    async def scenario() -> float:
        started = time.perf_counter()
        try:
            await asyncio.gather(*(provider.chat(ask(f"q{i}")) for i in range(64)))
        finally:
            await provider.aclose()
        return time.perf_counter() - started

    assert run(scenario) < 1.5  # 64 x 0.2 s would be 12.8 s if serialized


def test_scripted_server_rules_by_pattern_and_turn(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule("second turn", turn=2)
    scripted_server.add_rule("digits", pattern=r"\d+")
    scripted_server.add_rule("custom", when=lambda body: body["model"] == "special")
    provider = openai_at(scripted_server)
    two_turns = ChatRequest(
        model="m",
        messages=[
            ChatMessage("user", "hello"),
            ChatMessage("assistant", "hi"),
            ChatMessage("user", "again"),
        ],
    )

    async def scenario() -> list[str]:
        try:
            requests = [two_turns, ask("call 911"), ask("plain", model="special"), ask("plain")]
            return [(await provider.chat(r)).text for r in requests]
        finally:
            await provider.aclose()

    assert run(scenario) == ["second turn", "digits", "custom", "OK"]
    assert scripted_server.requests[0].json["messages"][1] == {
        "role": "assistant",
        "content": "hi",
    }
