"""While recording, the proxy passes a streamed answer on as it arrives: the app's SDK
gets its first token when the upstream sends it, and the cassette still holds the whole
stream, which replay gives back."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from openai import AsyncOpenAI

from tests.support.scripted_server import ScriptedServer
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.providers.cassettes import Cassette
from turncheck.targets.proxy import ANTHROPIC_DEFAULT, RecordingProxy, TurnScope, Upstreams

KEY = "sk-test-STREAMING-KEY-0123456789"
HOLD_S = 10.0
"""How long the server holds the rest of the stream: a proxy that buffered it would get
nothing to pass on until then, and the server would note the stream was not released."""


async def _stream_through(proxy: RecordingProxy, seen_first: threading.Event | None
                          ) -> list[str]:
    client = AsyncOpenAI(base_url=proxy.openai_base_url, api_key=proxy.token, max_retries=0)
    try:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", stream=True,
            messages=[{"role": "user", "content": "Say something long."}])
        pieces = []
        async for chunk in stream:
            if seen_first is not None:
                seen_first.set()
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        return pieces
    finally:
        await client.close()


async def _through_proxy(cassette: Cassette, upstream: str,
                         seen_first: threading.Event | None) -> list[str]:
    proxy = RecordingProxy(cassette, Upstreams(upstream, ANTHROPIC_DEFAULT, KEY, None))
    await proxy.start()
    try:
        return await _stream_through(proxy, seen_first)
    finally:
        await proxy.stop()


def test_recording_passes_the_first_chunk_on_before_the_last_is_sent(tmp_path: Path) -> None:
    path = tmp_path / "app.eval.cassette.yaml"
    seen_first = threading.Event()
    with ScriptedServer(default_reply="one two three four five six seven eight") as server:
        server.hold_streams(seen_first, HOLD_S)
        recording = CassetteTransport(path, "record", secrets=[KEY])
        pieces = asyncio.run(_through_proxy(recording, server.base_url, seen_first))
        recording.save()
        asyncio.run(recording.close())
        assert server.streams_released == [True]  # the app had the first token first
        upstream = server.base_url
    assert "".join(pieces) == "one two three four five six seven eight"
    replaying = Cassette(path, "replay", secrets=[KEY])  # the server is gone
    assert asyncio.run(_through_proxy(replaying, upstream, None)) == pieces
    assert KEY not in path.read_text()


def test_a_stream_cut_short_upstream_is_cut_short_for_the_app_and_fails_the_turn(
        tmp_path: Path) -> None:
    path = tmp_path / "app.eval.cassette.yaml"
    seen_first = threading.Event()
    server = ScriptedServer(default_reply="one two three four five six").start()
    server.hold_streams(seen_first, HOLD_S)
    recording = CassetteTransport(path, "record", secrets=[KEY])

    async def cut_mid_stream() -> tuple[TurnScope, BaseException | None]:
        proxy = RecordingProxy(recording, Upstreams(server.base_url, ANTHROPIC_DEFAULT, KEY,
                                                    None))
        await proxy.start()
        scope = proxy.open_turn()
        client = AsyncOpenAI(base_url=proxy.openai_base_url, api_key=proxy.token,
                             max_retries=0)
        failure = None
        try:
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", stream=True, messages=[{"role": "user", "content": "Hi"}])
            async for _ in stream:
                await asyncio.to_thread(server.stop)  # the upstream goes away mid-answer
        except Exception as exc:  # what the SDK raises for a body cut short
            failure = exc
        finally:
            seen_first.set()
            await client.close()
            await proxy.stop()
        return scope, failure

    scope, failure = asyncio.run(cut_mid_stream())
    assert failure is not None  # the app saw the answer end early, not a complete one
    assert scope.errors and "chat/completions" in scope.errors[0]
    assert scope.calls == []
    assert not recording.save()  # nothing half-received was recorded
