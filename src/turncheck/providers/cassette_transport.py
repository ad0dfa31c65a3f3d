"""A cassette as an httpx transport: how record mode reaches the network and stores what
comes back, and how an httpx client (`httpx.AsyncClient(transport=...)`) replays.

Only recording and httpx clients load this module, and httpx with it: a replay through
`JsonHttpClient` asks the `Cassette` (cassettes.py) for its answer directly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import httpx

from turncheck.providers.aiohttp_transport import AiohttpTransport, client_timeout
from turncheck.providers.base import (
    MISSING_KEY_EXTENSION,
    NETWORK_GATE,
    RECORDED_LATENCY_HEADER,
    REPLAYED_EXTENSION,
    USABILITY_EXTENSION,
    ProviderError,
)
from turncheck.providers.cassettes import (
    CALLER_HEADER,
    DEFAULT_MAX_CASSETTE_BYTES,
    SAMPLE_HEADER,
    Cassette,
    CassetteFormatError,
    CassetteMode,
    Interaction,
    Key,
    current_caller,
    problem_of,
)
from turncheck.providers.json_limits import loads_bounded
from turncheck.providers.reply import Reply
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

    async def reply_to(self, method: str, url: str, headers: Mapping[str, str], body: bytes,
                       timeout_s: float) -> Reply:
        """`handle_async_request` without httpx's request and response objects (the
        recording proxy's way): the same key, answer, recording and scrubbing."""
        if self.load_error is not None:
            raise CassetteFormatError(self.load_error)
        if self.mode == "replay":
            return self.replay_reply(method, url, body, None)
        if self._inner is not None and not isinstance(self._inner, AiohttpTransport):
            return await self._reply_through_httpx(method, url, headers, body, timeout_s)
        key, stored_body, _ = self._key_of(method, url, body)
        try:
            async with self._locks.setdefault(key, asyncio.Lock()):
                hit = self._usable_hit(key, None)
                if hit is None:
                    await self._claim()
                    hit = self._usable_hit(key, None)
                if hit is not None:
                    self._unanswered.discard(key)
                    return hit.to_reply()
                gate = NETWORK_GATE.get()
                if gate is not None:
                    gate()
                return await self._record_reply(key, url, headers, body, stored_body,
                                                timeout_s)
        except BaseException:
            self._unanswered.add(key)
            raise

    async def _reply_through_httpx(self, method: str, url: str, headers: Mapping[str, str],
                                   body: bytes, timeout_s: float) -> Reply:
        outgoing = httpx.Request(method, url, headers=headers, content=body, extensions={
            "timeout": dict.fromkeys(("connect", "read", "write", "pool"), timeout_s)})
        response = await self.handle_async_request(outgoing)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return Reply.of(response)

    async def _record_reply(self, key: Key, url: str, headers: Mapping[str, str],
                            body: bytes, stored_body: bytes, timeout_s: float) -> Reply:
        if self._inner is None:
            self._inner = AiohttpTransport(max_connections=64)
        assert isinstance(self._inner, AiohttpTransport)
        sent_headers, sent_body = self._binder.bind(headers, body) if self._binder \
            else (headers, body)
        started = time.perf_counter()
        reply = await self._inner.session.request(key[0], url, sent_headers, sent_body,
                                                  client_timeout(timeout_s))
        latency_ms = (time.perf_counter() - started) * 1000
        response_headers = [(n.lower(), v) for n, v in reply.headers.items()]
        request_headers = [(n.lower(), v) for n, v in headers.items()]
        interaction = self._interaction(key, stored_body, request_headers, reply.status_code,
                                        reply.reason_phrase, response_headers, reply.content,
                                        latency_ms)
        if _worth(reply.status_code, reply.headers.get("content-type", ""), reply.content):
            self._keep(interaction)
            self._unanswered.discard(key)
        else:
            self._unanswered.add(key)
        fresh = interaction.to_reply()
        return Reply(fresh.status_code, fresh.reason_phrase, fresh.headers, fresh.content)

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
        return self._interaction(key, stored_body, request.headers.multi_items(),
                                 response.status_code, response.reason_phrase,
                                 response.headers.multi_items(), content, latency_ms)

    def _interaction(self, key: Key, stored_body: bytes, sent_headers: Iterable[tuple[str, str]],
                     status: int, reason: str, answer_headers: Iterable[tuple[str, str]],
                     content: bytes, latency_ms: float) -> Interaction:
        scrub = self._scrubber
        _, body = scrub.body(content)
        kept = [(n, v) for n, v in answer_headers if n.lower() in _STORED_RESPONSE_HEADERS]
        response_headers = [*scrub.headers(kept), (RECORDED_LATENCY_HEADER, f"{latency_ms:.1f}")]
        request_headers = [(n, v) for n, v in sent_headers
                           if n.lower() not in _UNSTORED_REQUEST_HEADERS]
        if key[3]:
            request_headers.append((SAMPLE_HEADER, str(key[3])))
        caller = current_caller()
        if caller is not None:
            request_headers.append((CALLER_HEADER, caller))
        return Interaction(
            key=key,
            method=key[0],
            uri=key[1],
            request_body=stored_body,
            request_headers=scrub.headers(request_headers),
            status=status,
            reason=reason,
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
    return _worth(response.status_code, response.headers.get("content-type", ""), content)


def _worth(status: int, content_type: str, content: bytes) -> bool:
    """2xx with a usable body: not malformed JSON, and not an error object sent with 200."""
    if not 200 <= status < 300:
        return False
    if "json" not in content_type:
        return True
    try:
        payload = loads_bounded(content)
    except (ValueError, UnicodeDecodeError):
        return False
    return not (isinstance(payload, dict) and "error" in payload)
