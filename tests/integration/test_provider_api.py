"""Today's provider API shapes (issue 24): OpenAI's max_completion_tokens and
reasoning_effort, reasoning and cached token counts priced with genai-prices, and the
validation warnings for settings a model family rejects."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from turncheck.engine.pricing import Pricer
from turncheck.formats.suite_loader import parse_suite
from turncheck.providers.base import ChatRequest, ChatResponse, ProviderError
from turncheck.providers.factory import make_provider
from turncheck.report.spend import Usage

REASONING_USAGE = {
    "prompt_tokens": 1200, "completion_tokens": 900, "total_tokens": 2100,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 640, "audio_tokens": 0,
                                  "accepted_prediction_tokens": 0,
                                  "rejected_prediction_tokens": 0},
}
REASONING_REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1764000000, "model": "o4-mini",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "42", "refusal": None}}],
    "usage": REASONING_USAGE,
}


def openai_chat(request: ChatRequest) -> tuple[dict[str, Any], ChatResponse]:
    """`request` sent to OpenAI's own API (api.openai.com, answered in memory: no network);
    the body it sent and the response it parsed."""
    sent: list[dict[str, Any]] = []

    def handler(http_request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(http_request.content))
        return httpx.Response(200, json=REASONING_REPLY)

    async def call() -> ChatResponse:
        provider = make_provider("openai", env={"OPENAI_API_KEY": "sk-test"},
                                 transport=httpx.MockTransport(handler))
        try:
            return await provider.chat(request)
        finally:
            await provider.aclose()

    response = asyncio.run(call())
    return sent[0], response


def test_openai_reasoning_request_carries_max_completion_tokens_and_effort() -> None:
    body, response = openai_chat(ChatRequest(model="o4-mini", max_output_tokens=2048,
                                             reasoning_effort="low"))
    assert body["max_completion_tokens"] == 2048
    assert "max_tokens" not in body
    assert body["reasoning_effort"] == "low"
    assert (response.input_tokens, response.output_tokens) == (1200, 900)
    assert (response.reasoning_tokens, response.cached_input_tokens) == (640, 1024)


def test_other_openai_compatible_servers_keep_max_tokens(scripted_server: Any) -> None:
    async def call() -> None:
        provider = make_provider("openai", env={}, base_url=scripted_server.base_url)
        try:
            await provider.chat(ChatRequest(model="local", max_output_tokens=64))
        finally:
            await provider.aclose()

    asyncio.run(call())
    body = scripted_server.requests[-1].json
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body


def test_cached_input_tokens_are_priced_at_the_cache_read_rate() -> None:
    pricer = Pricer.at("2026-11-01T00:00:00Z")
    usage = Usage(input_tokens=1200, output_tokens=900)
    cached = pricer.cost(usage, "o4-mini", "openai", cached_input_tokens=1024)
    full = pricer.cost(usage, "o4-mini", "openai")
    expected = calc_price(PriceUsage(input_tokens=1200, output_tokens=900, cache_read_tokens=1024),
                          model_ref="o4-mini", provider_id="openai",
                          genai_request_timestamp=pricer.timestamp).total_price
    assert cached == float(expected)
    assert cached is not None and full is not None and cached < full


SUITE = """\
metadata:
  name: settings
  model: {model}
{settings}evals:
  - {{prompt: hi, checks: [{{match: "*"}}]}}
"""


@pytest.mark.parametrize(("model", "settings", "expected"), [
    ("openai/gpt-5-mini", "  temperature: 0\n",
     [(4, "temperature", "gpt-5-mini is an OpenAI reasoning model: it rejects a temperature")]),
    ("o3", "  temperature: 1\n  reasoning_effort: high\n", []),
    ("gpt-4o-mini", "  temperature: 0\n  reasoning_effort: low\n",
     [(5, "reasoning_effort", "gpt-4o-mini is not an OpenAI reasoning model")]),
    ("anthropic:claude-sonnet-4-5", "  seed: 7\n  reasoning_effort: minimal\n",
     [(4, "seed", "Anthropic's Messages API has no seed"),
      (5, "reasoning_effort", 'Anthropic takes effort low, medium or high, not "minimal"')]),
    ("claude-haiku-4-5", "  temperature: 0\n  reasoning_effort: high\n  provider: anthropic\n",
     [(4, "temperature", "Anthropic's Messages API takes no temperature; it is not sent")]),
])
def test_validation_warns_about_settings_the_model_family_rejects(
    model: str, settings: str, expected: list[tuple[int, str, str]]
) -> None:
    loaded = parse_suite(SUITE.format(model=model, settings=settings), "s.eval.yaml")
    assert loaded.suite is not None  # warnings only: the suite still runs
    found = sorted((d.line, d.severity.value, d.code, d.message) for d in loaded.diagnostics)
    assert len(found) == len(expected)
    for (line, _field, text), (got_line, severity, code, message) in zip(
            expected, found, strict=True):
        assert (got_line, severity, code) == (line, "warning", "model-family")
        assert text in message


def chat_through(provider_name: str, env: dict[str, str], base_url: str | None) -> ChatResponse:
    async def call() -> ChatResponse:
        provider = make_provider(provider_name, env=env, base_url=base_url)
        try:
            return await provider.chat(ChatRequest(model="gpt-4.1-mini", max_output_tokens=50))
        finally:
            await provider.aclose()

    return asyncio.run(call())


def test_azure_openai_deployment_urls_api_key_header_and_api_version(
    scripted_server: Any
) -> None:
    host = scripted_server.base_url.removesuffix("/v1")
    deployment = f"{host}/openai/deployments/weather-gpt41"
    env = {"AZURE_OPENAI_API_KEY": "azure-key-123456"}
    chat_through("azure", env, deployment)
    chat_through("azure", {**env, "AZURE_OPENAI_API_VERSION": "2025-04-01-preview"},
                 deployment)
    chat_through("azure", env, f"{host}/openai/v1")
    first, second, third = scripted_server.requests
    assert first.path == "/openai/deployments/weather-gpt41/chat/completions" \
        "?api-version=2024-10-21"
    assert second.path.endswith("?api-version=2025-04-01-preview")
    assert third.path == "/openai/v1/chat/completions"  # the v1 API takes no version
    assert first.headers["api-key"] == "azure-key-123456"
    assert "authorization" not in first.headers
    assert first.json["max_completion_tokens"] == 50 and "max_tokens" not in first.json


def test_azure_without_a_base_url_is_a_clear_error_per_call() -> None:
    with pytest.raises(ProviderError, match="azure needs base_url: the deployment URL"):
        chat_through("azure", {"AZURE_OPENAI_API_KEY": "k" * 8}, None)


def test_gemini_openai_compatible_endpoint_with_its_key(scripted_server: Any) -> None:
    host = scripted_server.base_url.removesuffix("/v1")
    response = chat_through("gemini", {"GEMINI_API_KEY": "gemini-key-123456"},
                            f"{host}/v1beta/openai")
    [request] = scripted_server.requests
    assert request.path == "/v1beta/openai/chat/completions"
    assert request.headers["authorization"] == "Bearer gemini-key-123456"
    assert request.json["max_tokens"] == 50
    assert response.text == "OK"
    default = make_provider("gemini", env={})
    assert default.price_provider_id == "google"
    assert default.base_url == "https://generativelanguage.googleapis.com/v1beta/openai"  # type: ignore[attr-defined]
