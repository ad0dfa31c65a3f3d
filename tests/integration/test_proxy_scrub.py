"""Issue 46, item 3: a key the upstream echoes never reaches the app, in live mode too:
in a JSON answer, a 401 or 500 body, or split between two chunks of a stream."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web

from turncheck.targets.proxy import ANTHROPIC_DEFAULT, RecordingProxy, Upstreams

KEY = "sk-proj-" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz"


async def _echoing_upstream(request: web.Request) -> web.StreamResponse:
    """Answers with the key it was sent, as the path asks."""
    sent = request.headers.get("authorization", "").removeprefix("Bearer ")
    body = await request.json()
    status = int(body["model"].removeprefix("status-"))
    if body.get("stream"):
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        event = f'data: {{"echo": "{sent}"}}\n\n'.encode()
        middle = event.index(b"Ab3d") + 6
        await response.write(event[:middle])  # the key split between two chunks
        await asyncio.sleep(0.05)
        await response.write(event[middle:])
        await response.write_eof()
        return response
    return web.json_response({"error": {"message": f"Incorrect API key provided: {sent}",
                                        "key_b64": "not encoded"}}, status=status)


async def _answers() -> list[tuple[int, bytes]]:
    upstream = web.Application()
    upstream.router.add_post("/v1/chat/completions", _echoing_upstream)
    runner = web.AppRunner(upstream)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    proxy = RecordingProxy(None, Upstreams(f"http://127.0.0.1:{port}/v1", ANTHROPIC_DEFAULT,
                                           KEY, None))
    await proxy.start()
    answers = []
    try:
        async with aiohttp.ClientSession() as client:
            for status, stream in ((200, False), (401, False), (500, False), (200, True)):
                async with client.post(
                        f"{proxy.openai_base_url}/chat/completions",
                        json={"model": f"status-{status}", "stream": stream},
                        headers={"authorization": f"Bearer {proxy.token}"}) as answer:
                    answers.append((answer.status, await answer.read()))
    finally:
        await proxy.stop()
        await runner.cleanup()
    return answers


def test_a_key_the_upstream_echoes_is_scrubbed_from_what_the_app_gets_in_live_mode() -> None:
    answers = asyncio.run(_answers())
    assert [status for status, _ in answers] == [200, 401, 500, 200]
    for _, body in answers:
        assert b"Ab3dEf6h" not in body and b"sk-proj" not in body
        assert b"[REDACTED]" in body
    assert json.loads(answers[1][1])["error"]["message"].startswith("Incorrect API key")


@pytest.mark.parametrize(("raw_path", "status"), [
    ("/openai/v1/chat/completions%0d%0aX:%201", 403),
    ("/openai/v1/%2e%2e/%2e%2e/admin", 403),
    ("//openai/v1/chat/completions", 403),
    ("/openai/v1/chat completions", 400),  # a request line no parser takes
    ("/openai/v1/chat/completions?x=%0d%0a%00", 502),  # sent as is (nothing listens)
])
def test_a_hostile_path_is_refused_without_a_traceback(
        raw_path: str, status: int, caplog: pytest.LogCaptureFixture) -> None:
    async def send() -> int:
        proxy = RecordingProxy(None, Upstreams("http://127.0.0.1:9/v1", ANTHROPIC_DEFAULT,
                                               KEY, None))
        await proxy.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.write(f"POST {raw_path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                         f"Authorization: Bearer {proxy.token}\r\n\r\n{{}}".encode())
            await writer.drain()
            status = int((await reader.readline()).split()[1])
            writer.close()
            return status
        finally:
            await proxy.stop()

    assert asyncio.run(send()) == status
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text
    assert all(record.exc_info is None for record in caplog.records)
    assert len(caplog.records) <= 1 and all("\n" not in r.getMessage() for r in caplog.records)


def test_a_flood_of_refused_requests_writes_a_bounded_log(
        caplog: pytest.LogCaptureFixture) -> None:
    async def flood() -> list[int]:
        proxy = RecordingProxy(None, Upstreams("http://127.0.0.1:9/v1", ANTHROPIC_DEFAULT,
                                               KEY, None))
        await proxy.start()
        try:
            async with aiohttp.ClientSession() as client:
                statuses = []
                for _ in range(50):
                    async with client.get(f"{proxy.openai_base_url}/files") as answer:
                        statuses.append(answer.status)
                return statuses
        finally:
            await proxy.stop()

    assert set(asyncio.run(flood())) == {403}
    lines = [r.getMessage() for r in caplog.records if "turncheck proxy" in r.getMessage()]
    assert len(lines) == 21 and "further refusals are not logged" in lines[-1]
