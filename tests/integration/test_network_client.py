"""The aiohttp-based network client (providers/aiohttp_transport.py) behaves like httpx's
transport did: compressed bodies, keep-alive, refused connections, proxies, record mode."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.support.local_http import QuietHandler, serving
from turncheck.providers.base import ChatMessage, ChatRequest, ProviderError
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.providers.factory import make_provider
from turncheck.providers.http import RetryPolicy

FAST = RetryPolicy(max_attempts=2, backoff_base=0.001, backoff_cap=0.002, timeout=5.0)
REPLY = {
    "model": "m",
    "choices": [{"message": {"role": "assistant", "content": "zipped hello"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2},
}


class GzipHandler(QuietHandler):
    """Answers every chat request with a gzip-compressed JSON body over keep-alive."""

    protocol_version = "HTTP/1.1"
    connections: ClassVar[set[int]] = set()
    lock = threading.Lock()

    def respond(self) -> None:
        self.read_body()
        with self.lock:
            type(self).connections.add(id(self.connection))
        body = gzip.compress(json.dumps(REPLY).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def gzip_server() -> Iterator[str]:
    GzipHandler.connections = set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), GzipHandler)
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def ask(text: str) -> ChatRequest:
    return ChatRequest(model="m", messages=[ChatMessage("user", text)])


async def ask_in_turn(
    base_url: str, count: int, transport: CassetteTransport | None = None
) -> list[str]:
    provider = make_provider("openai", env={}, policy=FAST, base_url=base_url, transport=transport)
    try:
        return [(await provider.chat(ask(f"q{i}"))).text for i in range(count)]
    finally:
        await provider.aclose()


def test_gzip_bodies_are_decompressed_and_connections_kept_alive(gzip_server: str) -> None:
    assert asyncio.run(ask_in_turn(gzip_server, 5)) == ["zipped hello"] * 5
    assert len(GzipHandler.connections) == 1  # sequential calls reuse one connection


def test_record_mode_stores_the_decompressed_body(gzip_server: str, tmp_path: Path) -> None:
    suite = tmp_path / "s.eval.yaml"
    recorder = CassetteTransport(cassette_path_for(suite), "record")
    assert asyncio.run(ask_in_turn(gzip_server, 1, recorder)) == ["zipped hello"]
    assert recorder.save()
    text = cassette_path_for(suite).read_text()
    assert "zipped hello" in text and "gzip" not in text.lower()
    replayer = CassetteTransport(cassette_path_for(suite), "replay")
    assert asyncio.run(ask_in_turn(gzip_server, 1, replayer)) == ["zipped hello"]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_refused_connection_is_a_retried_connection_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ProviderError, match=r"connection error after 2 attempts: ConnectError"):
        asyncio.run(ask_in_turn(url, 1))


def test_a_non_http_url_fails_at_once() -> None:
    with pytest.raises(ProviderError, match=r"request failed: UnsupportedProtocol"):
        asyncio.run(ask_in_turn("ftp://127.0.0.1/v1", 1))


def test_requests_go_through_the_proxy_named_in_the_environment(
    gzip_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain-HTTP proxy gets the absolute URL; here the 'proxy' is the server itself."""
    monkeypatch.setenv("HTTP_PROXY", gzip_server.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    unreachable = f"http://127.0.0.1:{closed_port()}/v1"
    assert asyncio.run(ask_in_turn(unreachable, 1)) == ["zipped hello"]
