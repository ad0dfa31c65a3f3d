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
from typing import Any

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
from turncheck.providers.call_context import (
    CALLER_HEADER,
    SAMPLE_HEADER,
    current_caller,
    current_sample,
)
from turncheck.providers.cassette_file import DEFAULT_MAX_CASSETTE_BYTES, CassetteFormatError
from turncheck.providers.cassettes import Cassette, CassetteMode, problem_of
from turncheck.providers.interactions import Interaction, Key, body_digest, token_blind
from turncheck.providers.json_limits import JsonTooDeep, loads_bounded
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

    @property
    def sends_through_httpx(self) -> bool:
        """Whether recording reaches the network through a custom httpx transport (tests)
        rather than the aiohttp session `exchange`'s callers send with."""
        return self._inner is not None and not isinstance(self._inner, AiohttpTransport)

    def exchange(self, method: str, url: str, headers: Mapping[str, str],
                 body: bytes) -> Exchanging:
        """Record mode, for a caller that sends the request itself (the recording proxy,
        which streams the answer on as it arrives): the same key, lock, hit, budget gate,
        secret binding, scrubbing and recording as `handle_async_request`.

        `async with cassette.exchange(...) as exchange`: `exchange.hit` is the cassette's
        answer; without one, send `exchange.headers` and `exchange.body` (secrets bound)
        and hand the whole answer to `exchange.keep` before the block ends. Concurrent
        identical requests wait for the first."""
        return Exchanging(self, method, url, headers, body)

    async def _open_exchange(self, key: Key, headers: Mapping[str, str], body: bytes,
                             stored_body: bytes, model: object) -> Exchange:
        """With `key`'s lock held: the hit, or what to send (the budget gate passed)."""
        hit = self._usable_hit(key, None)
        if hit is None:
            await self._claim()
            hit = self._usable_hit(key, None)
        if hit is not None:
            self._unanswered.discard(key)
            return Exchange(self, key, hit.to_reply(), headers, body, stored_body, model)
        gate = NETWORK_GATE.get()
        if gate is not None:
            gate()
        sent_headers, sent_body = self._binder.bind(headers, body) if self._binder \
            else (headers, body)
        return Exchange(self, key, None, sent_headers, sent_body, stored_body, model,
                        dict(headers))

    def _key_and_request(self, method: str, url: str, body: bytes) -> tuple[Key, bytes, Any]:
        """`_key_of`, and the request's JSON value (None when it is not JSON)."""
        try:
            match_body, stored_body, parsed = self._scrubber.parsed_body(body)
        except JsonTooDeep as exc:
            raise ProviderError(f"cannot send the request: its body's {exc}") from None
        key = (method.upper(), self._scrubber.url(url), body_digest(token_blind(match_body)),
               current_sample())
        return key, stored_body, parsed

    def _record_exchange(self, exchange: Exchange, answer: Reply, latency_ms: float,
                         parsed: Any) -> Interaction:
        interaction = self._interaction(
            exchange.key, exchange.stored_body,
            [(name.lower(), value) for name, value in exchange.sent.items()],
            answer.status_code, answer.reason_phrase,
            [(name.lower(), value) for name, value in answer.headers.items()],
            answer.content, latency_ms)
        if _worth(answer.status_code, answer.headers.get("content-type", ""), answer.content,
                  parsed):
            self._keep(interaction)
            self._unanswered.discard(exchange.key)
            exchange.kept = True
        return interaction

    async def reply_to(self, method: str, url: str, headers: Mapping[str, str], body: bytes,
                       timeout_s: float) -> Reply:
        """`handle_async_request` for a caller holding bytes: the recording proxy when
        recording reaches the network through a custom httpx transport (tests; answers
        are read whole). With the aiohttp session, the proxy uses `exchange`."""
        if self.load_error is not None:
            raise CassetteFormatError(self.load_error)
        if self.mode == "replay":
            return self.replay_reply(method, url, body, None)
        return await self._reply_through_httpx(method, url, headers, body, timeout_s)

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
        body = scrub.answer_body(content)
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


UNPARSED: Any = object()
"""`_worth`'s `parsed` when the caller has not parsed the JSON body."""


def _worth(status: int, content_type: str, content: bytes, parsed: Any = UNPARSED) -> bool:
    """2xx with a usable body: not malformed JSON, and not an error object sent with 200.
    `parsed`: the body's JSON value if the caller has it (None: not JSON)."""
    if not 200 <= status < 300:
        return False
    if "json" not in content_type:
        return True
    if parsed is UNPARSED:
        try:
            parsed = loads_bounded(content)
        except (ValueError, UnicodeDecodeError):
            return False
    return parsed is not None and not (isinstance(parsed, dict) and "error" in parsed)


class Exchanging:
    """`CassetteTransport.exchange`'s block: holds the request key's lock while it runs
    (a class, not a generator: it is entered on every recorded call)."""

    def __init__(self, cassette: CassetteTransport, method: str, url: str,
                 headers: Mapping[str, str], body: bytes) -> None:
        self._cassette = cassette
        self._request = (method, url, headers, body)
        self._held: tuple[asyncio.Lock, Exchange] | None = None

    async def __aenter__(self) -> Exchange:
        cassette = self._cassette
        if cassette.load_error is not None:
            raise CassetteFormatError(cassette.load_error)
        method, url, headers, body = self._request
        key, stored_body, request = cassette._key_and_request(method, url, body)
        model = request.get("model") if isinstance(request, dict) else None
        locks = cassette._locks
        lock = locks.get(key) or locks.setdefault(key, asyncio.Lock())
        try:
            await lock.acquire()
        except BaseException:
            cassette._unanswered.add(key)
            raise
        try:
            exchange = await cassette._open_exchange(key, headers, body, stored_body, model)
        except BaseException:
            lock.release()
            cassette._unanswered.add(key)
            raise
        self._held = (lock, exchange)
        return exchange

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: object) -> None:
        assert self._held is not None
        lock, exchange = self._held
        lock.release()
        if kind is not None or (exchange.hit is None and not exchange.kept):
            self._cassette._unanswered.add(exchange.key)


class Exchange:
    """One request of `CassetteTransport.exchange`: the cassette's answer (`hit`), or
    what to send and where the answer goes (`keep`)."""

    def __init__(self, cassette: CassetteTransport, key: Key, hit: Reply | None,
                 headers: Mapping[str, str], body: bytes, stored_body: bytes,
                 model: object, sent: dict[str, str] | None = None) -> None:
        self._cassette = cassette
        self.key = key
        self.hit = hit
        self.headers = headers
        self.body = body
        self.stored_body = stored_body
        self.model = model if isinstance(model, str) else None
        """The request's `model`, read while keying it."""
        self.sent = sent or {}
        """The request's headers before secrets were bound: what the cassette stores."""
        self.kept = False

    def keep(self, answer: Reply, latency_ms: float, parsed: Any = UNPARSED) -> Reply:
        """Record `answer` if it is worth replaying; the answer as replay will give it
        (scrubbed). `parsed`: its body's JSON value, if the caller parsed it."""
        fresh = self._cassette._record_exchange(self, answer, latency_ms, parsed).to_reply()
        return Reply(fresh.status_code, fresh.reason_phrase, fresh.headers, fresh.content)
