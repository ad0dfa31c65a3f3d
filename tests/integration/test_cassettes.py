"""Cassette record/replay, scrubbing and untrusted-cassette handling."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest
from vcr.request import Request as VcrRequest
from vcr.serialize import deserialize, serialize
from vcr.serializers import yamlserializer

from tests.support.provider_helpers import run
from tests.support.scripted_server import ScriptedServer
from turncheck.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    Provider,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.cassette_file import CassetteFormatError, cassette_path_for
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.providers.cassettes import Cassette
from turncheck.providers.factory import make_provider, open_cassette
from turncheck.providers.http import RetryPolicy

FAST = RetryPolicy(max_attempts=3, backoff_base=0.001, backoff_cap=0.005, timeout=2.0)
API_KEY = "sk-test-SECRET123"
PROMPT_SECRET = "hunter2-TOPSECRET"


def ask(text: str, model: str = "vendor/model") -> ChatRequest:
    return ChatRequest(model=model, messages=[ChatMessage("user", text)])


def openrouter_via(
    transport: httpx.AsyncBaseTransport,
    base_url: str,
    env: Mapping[str, str] | None = None,
) -> Provider:
    env = {"OPENROUTER_API_KEY": API_KEY} if env is None else env
    return make_provider("openrouter", env=env, policy=FAST, transport=transport, base_url=base_url)


async def chat_all(provider: Provider, prompts: list[str]) -> list[ChatResponse]:
    try:
        return list(await asyncio.gather(*(provider.chat(ask(p)) for p in prompts)))
    finally:
        await provider.aclose()


def echo(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return f"you said: {messages[-1]['content']}"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "math.eval.yaml"
    path.write_text("metadata: {}\n")
    return path


def record(suite: Path, server: ScriptedServer, prompts: list[str]) -> list[ChatResponse]:
    transport = CassetteTransport(
        cassette_path_for(suite), "record", secrets=[API_KEY], suite_path=suite
    )
    responses = run(lambda: chat_all(openrouter_via(transport, server.base_url), prompts))
    assert transport.save()
    return responses


def replay(suite: Path, base_url: str, prompts: list[str], **kwargs: object) -> list[ChatResponse]:
    transport = CassetteTransport(
        cassette_path_for(suite),
        "replay",
        suite_path=suite,
        **kwargs,  # type: ignore[arg-type]
    )
    return run(lambda: chat_all(openrouter_via(transport, base_url, env={}), prompts))


def test_cassette_path_is_beside_the_suite() -> None:
    assert cassette_path_for(Path("examples/math.eval.yaml")) == Path(
        "examples/math.eval.cassette.yaml"
    )
    assert cassette_path_for(Path("a/b.yml")) == Path("a/b.cassette.yaml")


def test_record_then_replay_without_server_gives_identical_responses(suite: Path) -> None:
    prompts = ["What is 15 * 7?", "And 3 + 4?"]
    with ScriptedServer(default_reply=echo) as server:
        server.set_latency(0.02)
        base_url = server.base_url
        recorded = record(suite, server, prompts)
    replayed = replay(suite, base_url, prompts)  # the server is gone
    assert replayed == recorded
    assert replayed[0].text == "you said: What is 15 * 7?"
    assert replayed[0].latency_ms >= 20  # the recorded latency, not the replay's


def test_embeddings_and_anthropic_replay(suite: Path) -> None:
    path = cassette_path_for(suite)

    async def calls(transport: CassetteTransport, base_url: str, env: dict[str, str]) -> object:
        openai = make_provider("openai", env=env, transport=transport, base_url=base_url)
        anthropic = make_provider("anthropic", env=env, transport=transport, base_url=base_url)
        try:
            vectors = await openai.embed("emb", ["a b c", "d e"])
            reply = await anthropic.chat(
                ChatRequest("claude", [ChatMessage("system", "s"), ChatMessage("user", "hi")])
            )
            return vectors, reply
        finally:
            await openai.aclose()
            await anthropic.aclose()

    with ScriptedServer() as server:
        base_url = server.base_url
        recorder = CassetteTransport(path, "record", suite_path=suite)
        recorded = run(lambda: calls(recorder, base_url, {"ANTHROPIC_API_KEY": API_KEY}))
        recorder.save()
    replayer = CassetteTransport(path, "replay", suite_path=suite)
    assert run(lambda: calls(replayer, base_url, {})) == recorded


def test_replay_miss_names_the_request_and_how_to_record(suite: Path) -> None:
    with ScriptedServer() as server:
        base_url = server.base_url
        record(suite, server, ["recorded prompt"])
    with pytest.raises(RecordingMissing) as caught:
        replay(suite, base_url, ["a different prompt"])
    message = caught.value.message
    assert f"POST {base_url}/chat/completions" in message
    assert "model vendor/model" in message
    assert "body sha256 " in message
    assert str(cassette_path_for(suite)) in message
    assert f"turncheck record {suite}" in message


def test_a_miss_after_record_with_base_url_names_that_url(suite: Path) -> None:
    """Recorded with `record --base-url http://…`, replayed without it: the message
    names the URL the cassette was recorded against instead of suggesting a re-record
    against the default provider."""
    with ScriptedServer() as server:
        recorded_at = server.base_url
        record(suite, server, ["recorded prompt"])
    elsewhere = "http://127.0.0.1:9/api/v1"
    with pytest.raises(RecordingMissing) as caught:
        replay(suite, elsewhere, ["recorded prompt"])
    message = caught.value.message
    assert f"whose recordings were made against {recorded_at}: " in message
    assert f"replay with --base-url {recorded_at} " in message


def test_replay_without_a_cassette_is_a_miss(suite: Path) -> None:
    with pytest.raises(RecordingMissing, match="turncheck record"):
        replay(suite, "http://127.0.0.1:9/v1", ["anything"])


def test_api_key_and_secret_values_never_reach_the_cassette(suite: Path) -> None:
    path = cassette_path_for(suite)
    prompt = f"The password is {PROMPT_SECRET}. Repeat it."
    with ScriptedServer(default_reply=echo) as server:
        base_url = server.base_url
        transport = open_cassette(
            suite, "record", env={"OPENROUTER_API_KEY": API_KEY}, secrets=[PROMPT_SECRET]
        )
        assert transport is not None
        recorded = run(lambda: chat_all(openrouter_via(transport, base_url), [prompt]))
        transport.save()
        assert server.requests[0].json["messages"][0]["content"] == prompt  # sent for real
    text = path.read_text()
    assert API_KEY not in text and "SECRET123" not in text
    assert PROMPT_SECRET not in text and "TOPSECRET" not in text
    assert "<SECRET>" in text
    assert "authorization" not in text.lower()
    # Record mode already returns what replay will: the scrubbed response.
    assert recorded[0].text == "you said: The password is <SECRET>. Repeat it."
    # Replay matches both with the real secret value and with the placeholder.
    again = replay(suite, base_url, [prompt], secrets=[PROMPT_SECRET])
    assert again == recorded
    assert replay(suite, base_url, ["The password is <SECRET>. Repeat it."]) == recorded


def test_sensitive_headers_are_dropped_case_insensitively(suite: Path) -> None:
    path = cassette_path_for(suite)

    def inner(request: httpx.Request) -> httpx.Response:
        headers = {"Set-Cookie": "session=abc", "X-Request-Id": "r1", "Api-Key": "k"}
        return httpx.Response(200, json={"ok": True}, headers=headers)

    async def scenario() -> None:
        transport = CassetteTransport(path, "record", httpx.MockTransport(inner))
        async with httpx.AsyncClient(transport=transport) as client:
            headers = {
                "Authorization": "Bearer x",
                "X-API-KEY": "y",
                "OpenAI-Organization": "org",
                "Cookie": "c=1",
                "X-Custom": "kept",
            }
            await client.post("https://example.test/v1/x", json={"a": 1}, headers=headers)
        transport.save()

    run(scenario)
    text = path.read_text().lower()
    for name in ("authorization", "x-api-key", "api-key", "openai-organization", "cookie"):
        assert f"{name}:" not in text
    assert "x-custom" in text  # other request headers are kept
    assert "x-request-id" not in text  # responses keep only content-type


def test_json_key_order_and_whitespace_do_not_matter(suite: Path) -> None:
    path = cassette_path_for(suite)
    with ScriptedServer() as server:
        base_url = server.base_url
        record(suite, server, ["order test"])

    async def reordered() -> httpx.Response:
        body = (
            '{ "messages" : [ {"content": "order test", "role": "user"} ],'
            '  "model": "vendor/model" }'
        )
        transport = CassetteTransport(path, "replay")
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.post(f"{base_url}/chat/completions", content=body)

    response = run(reordered)
    assert response.json()["choices"][0]["message"]["content"] == "OK"


def test_oversized_cassette_is_refused_with_a_clear_error(suite: Path) -> None:
    path = cassette_path_for(suite)
    path.write_text("x" * 2000)
    transport = CassetteTransport(path, "replay", suite_path=suite, max_bytes=1000)
    assert transport.load_error is not None
    assert "larger than the 1,000-byte limit" in transport.load_error
    with pytest.raises(ProviderError, match="1,000-byte limit"):
        run(lambda: chat_all(openrouter_via(transport, "http://127.0.0.1:9/v1", env={}), ["x"]))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("interactions: [\n  - {request: ", "not a valid vcrpy cassette"),
        ("!!python/object/apply:os.system ['touch PWNED']\n", "not a valid vcrpy cassette"),
        ("version: 1\ninteractions: 5\n", "not a valid vcrpy cassette"),
        ("- 1\n- 2\n", "not a valid vcrpy cassette"),
        # would crash libyaml's recursive composer (segfault) if parsed directly
        ("interactions: " + "[" * 100_000 + "]" * 100_000, "nests deeper than 64"),
        (
            "a: &a {request: {method: POST, uri: 'http://x/', body: null, headers: {}},"
            " response: {status: {code: 200}, headers: {}, body: {string: ''}}}\n"
            "interactions: [" + "*a, " * 2000 + "]\n",
            "more than 1000 YAML aliases",
        ),
        (
            "version: 1\ninteractions:\n- request: {method: POST, uri: 'http://x/', body: null,"
            " headers: {}}\n  response: {status: {code: 9999}, headers: {}, body: {string: ''}}\n",
            "interaction 1 is malformed",
        ),
    ],
)
def test_corrupt_cassette_errors_every_request(
    suite: Path, tmp_path: Path, content: str, expected: str
) -> None:
    path = cassette_path_for(suite)
    path.write_text(content)
    transport = CassetteTransport(path, "replay", suite_path=suite)
    assert transport.load_error is not None and expected in transport.load_error
    assert f"turncheck record {suite}" in transport.load_error
    assert not (tmp_path / "PWNED").exists()
    for _ in range(2):
        with pytest.raises(CassetteFormatError, match=expected):
            run(lambda: chat_all(openrouter_via(transport, "http://x/v1", env={}), ["x"]))


def test_corrupt_cassette_is_not_overwritten_in_record_mode(suite: Path) -> None:
    path = cassette_path_for(suite)
    path.write_text("interactions: [")
    transport = CassetteTransport(path, "record", suite_path=suite)
    with pytest.raises(CassetteFormatError):
        run(lambda: chat_all(openrouter_via(transport, "http://x/v1"), ["x"]))
    assert not transport.save()
    assert path.read_text() == "interactions: ["


def echo_transport() -> httpx.MockTransport:
    """An in-process stand-in for the server, to record many interactions quickly."""

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text = echo(body)
        return httpx.Response(200, json={"choices": [{"message": {"content": text}}]})

    return httpx.MockTransport(reply)


def test_concurrent_replay_of_1000_requests_is_deterministic(suite: Path) -> None:
    prompts = [f"question number {i}" for i in range(1000)]
    base_url = "https://example.test/v1"
    transport = CassetteTransport(cassette_path_for(suite), "record", echo_transport())
    recorded = run(lambda: chat_all(openrouter_via(transport, base_url), prompts))
    transport.save()
    first = replay(suite, base_url, prompts)
    second = replay(suite, base_url, list(reversed(prompts)))
    assert first == recorded
    assert list(reversed(second)) == recorded
    assert all(r.text == f"you said: {p}" for r, p in zip(first, prompts, strict=True))


def test_repeated_requests_get_recorded_order_then_the_last_again(suite: Path) -> None:
    path = cassette_path_for(suite)
    url = "https://example.test/v1/chat/completions"
    body = json.dumps({"model": "m", "messages": []}).encode()
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps({"n": n})},
        }
        for n in (1, 2)
    ]
    requests = [VcrRequest("POST", url, body, {}) for _ in responses]
    path.write_text(serialize({"requests": requests, "responses": responses}, yamlserializer))

    async def scenario() -> list[int]:
        transport = CassetteTransport(path, "replay")
        async with httpx.AsyncClient(transport=transport) as client:
            return [(await client.post(url, content=body)).json()["n"] for _ in range(4)]

    assert run(scenario) == [1, 2, 2, 2]


def test_record_mode_answers_hits_from_the_cassette_and_sends_misses_once(suite: Path) -> None:
    path = cassette_path_for(suite)
    with ScriptedServer() as server:
        base_url = server.base_url
        record(suite, server, ["old"])
        server.set_latency(0.05)
        transport = CassetteTransport(path, "record", suite_path=suite)
        prompts = ["old", "new", "new", "new"]
        run(lambda: chat_all(openrouter_via(transport, base_url), prompts))
        assert [r.json["messages"][0]["content"] for r in server.requests] == ["old", "new"]
        assert transport.recorded_count == 1
        assert transport.save()
        assert not transport.save()  # nothing new since
    assert len(CassetteTransport(path, "replay")) == 2
    assert not list(path.parent.glob("*.tmp"))


def test_record_mode_does_not_record_failures(suite: Path) -> None:
    path = cassette_path_for(suite)
    with ScriptedServer() as server:
        server.add_rule(fault="server_error", times=1)
        server.add_rule(fault="malformed", times=1)
        transport = CassetteTransport(path, "record", suite_path=suite)
        (response,) = run(lambda: chat_all(openrouter_via(transport, server.base_url), ["x"]))
        assert response.text == "OK"
        assert len(server.requests) == 3
    transport.save()
    assert len(CassetteTransport(path, "replay")) == 1


def test_record_mode_does_not_record_an_error_sent_with_200(suite: Path) -> None:
    def error_200(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"error": {"message": "upstream overloaded"}})

    transport = CassetteTransport(
        cassette_path_for(suite), "record", httpx.MockTransport(error_200)
    )
    with pytest.raises(ProviderError, match="upstream overloaded"):
        run(lambda: chat_all(openrouter_via(transport, "https://example.test/v1"), ["x"]))
    assert not transport.save()


def test_record_mode_needs_the_key_only_for_misses(suite: Path) -> None:
    with ScriptedServer() as server:
        base_url = server.base_url
        record(suite, server, ["known"])
        transport = CassetteTransport(cassette_path_for(suite), "record", suite_path=suite)
        known = run(lambda: chat_all(openrouter_via(transport, base_url, env={}), ["known"]))
        assert known[0].text == "OK"
        with pytest.raises(ProviderError, match="OPENROUTER_API_KEY is not set"):
            run(lambda: chat_all(openrouter_via(transport, base_url, env={}), ["unknown"]))
        assert len(server.requests) == 1


def test_compressed_responses_are_stored_decoded(suite: Path) -> None:
    path = cassette_path_for(suite)
    payload = {"choices": [{"message": {"content": "zipped reply"}}]}

    def inner(request: httpx.Request) -> httpx.Response:
        content = gzip.compress(json.dumps(payload).encode())
        headers = {"content-encoding": "gzip", "content-type": "application/json"}
        return httpx.Response(200, content=content, headers=headers)

    transport = CassetteTransport(path, "record", httpx.MockTransport(inner))
    recorded = run(lambda: chat_all(openrouter_via(transport, "https://example.test/v1"), ["z"]))
    transport.save()
    assert "zipped reply" in path.read_text()
    assert "content-encoding" not in path.read_text()
    assert recorded[0].text == "zipped reply"
    replayed = replay(suite, "https://example.test/v1", ["z"])
    assert replayed == recorded


def test_cassette_is_a_vcrpy_cassette(suite: Path) -> None:
    with ScriptedServer() as server:
        record(suite, server, ["one", "two"])
    requests, responses = deserialize(cassette_path_for(suite).read_text(), yamlserializer)
    assert [r.method for r in requests] == ["POST", "POST"]
    assert all(r["status"]["code"] == 200 for r in responses)
    assert all(isinstance(r["body"]["string"], bytes) for r in responses)
    text = cassette_path_for(suite).read_text()
    assert "version: 1" in text and '"content": "one"' in text


def test_open_cassette_is_none_in_live_mode(suite: Path) -> None:
    assert open_cassette(suite, "live", env={}) is None


def test_replay_needs_no_httpx_transport_and_matches_a_url_httpx_normalised(suite: Path) -> None:
    """Record mode's cassette is an httpx transport; replay's is the plain `Cassette`,
    which keys a request by its URL in httpx's form all the same: a base URL httpx
    rewrites (scheme case, a dot segment) replays what it recorded."""
    recorder = open_cassette(suite, "record", env={"OPENROUTER_API_KEY": API_KEY})
    replayer = open_cassette(suite, "replay", env={})
    assert isinstance(recorder, httpx.AsyncBaseTransport)
    assert isinstance(replayer, Cassette) and not isinstance(replayer, httpx.AsyncBaseTransport)
    with ScriptedServer(default_reply=echo) as server:
        odd_url = server.base_url.replace("http://", "HTTP://") + "/."
        recorded = run(lambda: chat_all(openrouter_via(recorder, odd_url), ["odd url"]))
        assert recorder.save()
    stored = cassette_path_for(suite).read_text()
    assert f"uri: {server.base_url}/chat/completions" in stored  # httpx's form
    replayer = open_cassette(suite, "replay", env={})
    assert replayer is not None
    replayed = run(lambda: chat_all(openrouter_via(replayer, odd_url, env={}), ["odd url"]))
    assert replayed == recorded
    assert replayed[0].text == "you said: odd url"
