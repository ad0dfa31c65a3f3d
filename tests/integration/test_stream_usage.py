"""Cost you can trust (docs/targets.md, "Usage and cost"): a streamed Chat Completions
call that does not ask for usage (OpenAI's quickstart: `stream=True`, no
`stream_options`) is counted exactly — the proxy asks the upstream for usage and hands
the app the stream it would have had without it, byte for byte — and a call whose usage
cannot be had is estimated and marked so, never 0 tokens and $0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.refund_helpers import refund_model, refund_target
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import upstream_env
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.providers.cassettes import Cassette
from turncheck.report.results import Status
from turncheck.targets.proxy import ANTHROPIC_DEFAULT, RecordingProxy, Upstreams

KEY = "sk-test-STREAM-USAGE-KEY-0123456789"
QUICKSTART = {"model": "gpt-4o-mini", "stream": True,
              "messages": [{"role": "user", "content": "Say something long, please."}]}


async def _posted(base_url: str, body: dict[str, object], key: str = "placeholder") -> bytes:
    async with httpx.AsyncClient() as client:
        answer = await client.post(base_url + "/chat/completions", json=body,
                                   headers={"authorization": f"Bearer {key}"})
        return answer.content


async def _through_proxy(cassette: Cassette, upstream: str) -> bytes:
    proxy = RecordingProxy(cassette, Upstreams(upstream, ANTHROPIC_DEFAULT, KEY, None))
    await proxy.start()
    try:
        return await _posted(proxy.openai_base_url, QUICKSTART, proxy.token)
    finally:
        await proxy.stop()


def test_the_app_gets_the_stream_it_asked_for_byte_for_byte_while_usage_is_recorded(
        tmp_path: Path) -> None:
    path = tmp_path / "app.eval.cassette.yaml"
    with ScriptedServer(default_reply="one two three four five six seven") as server:
        direct = asyncio.run(_posted(server.base_url, QUICKSTART))  # what the app would get
        recording = CassetteTransport(path, "record", secrets=[KEY])
        recorded = asyncio.run(_through_proxy(recording, server.base_url))
        recording.save()
        asyncio.run(recording.close())
        asked = server.requests[-1].json
        upstream = server.base_url
    replayed = asyncio.run(_through_proxy(Cassette(path, "replay", secrets=[KEY]), upstream))

    assert asked["stream_options"] == {"include_usage": True}
    assert b'"usage"' not in direct
    assert recorded == direct and replayed == direct
    assert "prompt_tokens" in path.read_text()  # the usage the app did not ask for


def test_a_quickstart_streaming_app_is_counted_exactly_and_replays_the_same(
        tmp_path: Path) -> None:
    suite = write_suite(tmp_path, refund_target({"APP_STREAM": "1", "APP_STREAM_OPTIONS": "0"}))
    with ScriptedServer(default_reply=refund_model) as server:
        env = upstream_env(server.base_url)
        recorded = run_paths([suite], server, "record", env=env)
        asked = [request.json.get("stream_options") for request in server.requests]
    replayed = run_paths([suite], None, "replay", env=env)

    [result] = recorded.suites[0].evals
    assert result.status == Status.PASS, result.error
    assert asked == [{"include_usage": True}] * 4
    calls = [call for turn in result.turns for call in turn.app_calls]
    assert all(call.input_tokens and call.output_tokens and not call.tokens_estimated
               for call in calls)
    assert not any(turn.output_tokens_estimated for turn in result.turns)
    assert result.usage.input_tokens > 0 and result.cost_usd
    [again] = replayed.suites[0].evals
    assert (again.status, again.usage, again.cost_usd) == (Status.PASS, result.usage,
                                                           result.cost_usd)


def test_a_call_whose_usage_cannot_be_had_is_estimated_and_marked_never_zero(
        tmp_path: Path) -> None:
    # The app says no to usage (`include_usage: false`): its choice is kept.
    suite = write_suite(tmp_path, refund_target({"APP_STREAM": "1",
                                                 "APP_STREAM_OPTIONS": "off"}))
    with ScriptedServer(default_reply=refund_model) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        asked = [request.json.get("stream_options") for request in server.requests]

    [result] = report.suites[0].evals
    assert result.status == Status.PASS, result.error
    assert asked == [{"include_usage": False}] * 4
    calls = [call for turn in result.turns for call in turn.app_calls]
    assert all(call.tokens_estimated and call.input_tokens and call.output_tokens
               and call.cost_usd for call in calls)
    assert all(turn.output_tokens_estimated for turn in result.turns)
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.cost_usd
    assert json.loads(report.model_dump_json())["suites"][0]["evals"][0]["turns"][0][
        "app_calls"][0]["tokens_estimated"] is True


def test_an_upstream_that_refuses_stream_options_gets_the_apps_own_request(
        tmp_path: Path) -> None:
    suite = write_suite(tmp_path, refund_target({"APP_STREAM": "1", "APP_STREAM_OPTIONS": "0"}))
    with ScriptedServer(default_reply=refund_model) as server:
        server.add_rule(fault="bad_request", when=lambda body: "stream_options" in body)
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        answered = [request.json.get("stream_options") for request in server.requests]

    [result] = report.suites[0].evals
    assert result.status == Status.PASS, result.error
    assert answered == [{"include_usage": True}, None] * 4  # refused, then the app's own
    calls = [call for turn in result.turns for call in turn.app_calls]
    assert len(calls) == 4
    assert all(call.tokens_estimated and call.input_tokens and call.cost_usd for call in calls)
