"""A cassette as an httpx transport: how record mode reaches the network and stores what
comes back, and how an httpx client (`httpx.AsyncClient(transport=...)`) replays.

Only recording and httpx clients load this module, and httpx with it: a replay through
`JsonHttpClient` asks the `Cassette` (cassettes.py) for its answer directly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

import httpx

from turncheck.providers.aiohttp_transport import AiohttpTransport
from turncheck.providers.base import (
    MISSING_KEY_EXTENSION,
    NETWORK_GATE,
    RECORDED_LATENCY_HEADER,
    REPLAYED_EXTENSION,
    USABILITY_EXTENSION,
    ProviderError,
)
from turncheck.providers.cassettes import (
    DEFAULT_MAX_CASSETTE_BYTES,
    SAMPLE_HEADER,
    Cassette,
    CassetteFormatError,
    CassetteMode,
    Interaction,
    Key,
    problem_of,
)
from turncheck.providers.json_limits import loads_bounded
from turncheck.providers.secrets import SecretBinder

# Not stored, to keep cassettes small and quick to load: request headers that
# httpx adds itself, and every response header but the content type (a replay
# needs nothing else, and the stored body is already decompressed) and the retry
# hints: record mode hands the retry loop what it stores, so dropping `Retry-After`
# here would make recording retry on its own backoff where live mode waits as told.
_UNSTORED_REQUEST_HEADERS = frozenset(
    {"host", "content-length", "accept", "accept-encoding", "connection", "user-agent"}
)
_STORED_RESPONSE_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms"})


class CassetteTransport(Cassette, httpx.AsyncBaseTransport):
    """Answers requests from a cassette; in record mode, records the misses through
    `inner_transport` (default: the aiohttp network client)."""

    def __init__(
        self,
        path: Path,
        mode: CassetteMode,
        inner_transport: httpx.AsyncBaseTransport | None = None,
        secrets: Iterable[str] = (),
        suite_path: Path | str | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_CASSETTE_BYTES,
        record_command: str | None = None,
        binder: SecretBinder | None = None,
        prune: bool = False,
        shown_as: Path | str | None = None,
    ) -> None:
        super().__init__(path, mode, secrets, suite_path, max_bytes=max_bytes,
                         record_command=record_command, binder=binder, prune=prune,
                         shown_as=shown_as)
        self._inner = inner_transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.load_error is not None:
            raise CassetteFormatError(self.load_error)
        raw_body = await request.aread()
        key, stored_body, match_body = self._key_of(request.method, str(request.url), raw_body)
        usable = request.extensions.get(USABILITY_EXTENSION)
        if self.mode == "replay":
            return _as_httpx(self._replay(key, usable, match_body), replayed=True)
        try:
            return await self._answer_or_record(request, key, stored_body, usable)
        except BaseException:
            self._unanswered.add(key)
            raise

    async def _answer_or_record(
        self, request: httpx.Request, key: Key, stored_body: bytes, usable: object
    ) -> httpx.Response:
        async with self._locks.setdefault(key, asyncio.Lock()):
            hit = self._usable_hit(key, usable)
            if hit is None:
                await self._claim()
                hit = self._usable_hit(key, usable)  # another recorder may have saved it
            if hit is not None:
                self._unanswered.discard(key)
                return _as_httpx(hit, replayed=True)
            missing_key = request.extensions.get(MISSING_KEY_EXTENSION)
            if isinstance(missing_key, str):
                raise ProviderError(missing_key)
            gate = NETWORK_GATE.get()
            if gate is not None:
                gate()  # may refuse the request (a budget): raises before anything is sent
            return await self._record(request, key, stored_body)

    async def close(self) -> None:
        await super().close()
        if self._inner is not None:
            await self._inner.aclose()

    async def _record(self, request: httpx.Request, key: Key, stored_body: bytes) -> httpx.Response:
        if self._inner is None:
            self._inner = AiohttpTransport(max_connections=64)
        started = time.perf_counter()
        outgoing = _bound(self._binder, request) if self._binder else request
        response = await self._inner.handle_async_request(outgoing)
        try:
            content = await response.aread()  # decompresses gzip/deflate/br
        finally:
            await response.aclose()
        latency_ms = (time.perf_counter() - started) * 1000
        interaction = self._scrubbed(request, key, stored_body, response, content, latency_ms)
        usable = request.extensions.get(USABILITY_EXTENSION)
        if _worth_recording(response, content) and problem_of(content, usable) is None:
            self._keep(interaction)
            self._unanswered.discard(key)
        else:
            self._unanswered.add(key)  # a retry that gets an answer takes it back
        return _as_httpx(interaction)

    def _scrubbed(
        self,
        request: httpx.Request,
        key: Key,
        stored_body: bytes,
        response: httpx.Response,
        content: bytes,
        latency_ms: float,
    ) -> Interaction:
        scrub = self._scrubber
        _, body = scrub.body(content)
        kept = [
            (n, v)
            for n, v in response.headers.multi_items()
            if n.lower() in _STORED_RESPONSE_HEADERS
        ]
        response_headers = [*scrub.headers(kept), (RECORDED_LATENCY_HEADER, f"{latency_ms:.1f}")]
        request_headers = [
            (n, v)
            for n, v in request.headers.multi_items()
            if n.lower() not in _UNSTORED_REQUEST_HEADERS
        ]
        if key[3]:
            request_headers.append((SAMPLE_HEADER, str(key[3])))
        return Interaction(
            key=key,
            method=key[0],
            uri=key[1],
            request_body=stored_body,
            request_headers=scrub.headers(request_headers),
            status=response.status_code,
            reason=response.reason_phrase,
            response_headers=response_headers,
            response_body=body,
        )


def _as_httpx(interaction: Interaction, replayed: bool = False) -> httpx.Response:
    return httpx.Response(
        interaction.status,
        headers=interaction.response_headers,
        stream=httpx.ByteStream(interaction.response_body),
        extensions={
            "reason_phrase": interaction.reason.encode("ascii", errors="replace"),
            REPLAYED_EXTENSION: replayed,
        },
    )


def _bound(binder: SecretBinder, request: httpx.Request) -> httpx.Request:
    """`request` with the tokens in its body and header values bound (secrets.py)."""
    headers = {n: v for n, v in request.headers.items() if n.lower() != "content-length"}
    bound_headers, body = binder.bind(headers, request.content)
    return httpx.Request(request.method, request.url, headers=bound_headers, content=body,
                         extensions=request.extensions)


def _worth_recording(response: httpx.Response, content: bytes) -> bool:
    """2xx with a usable body: not malformed JSON, and not an error object sent with 200."""
    if not 200 <= response.status_code < 300:
        return False
    if "json" not in response.headers.get("content-type", ""):
        return True
    try:
        payload = loads_bounded(content)
    except (ValueError, UnicodeDecodeError):
        return False
    return not (isinstance(payload, dict) and "error" in payload)
