"""The network client of every provider: aiohttp, with httpx's exceptions.

Why not httpx's own transport: at zero latency about two thirds of the engine's CPU
went to its stack (httpcore → anyio → h11: a cancel scope per I/O timeout, sniffio
task look-ups, pure-Python header parsing, a liveness check per pooled connection).
aiohttp does the same HTTP/1.1 keep-alive work with C parsers and plain asyncio (see
benchmarks/README.md). Failures raise httpx's exceptions and cassettes stay httpx
transports, so retries, timeouts, `Retry-After` and tests keep working.

`JsonHttpClient` sends live calls with `AiohttpSession.request` and gets a `Reply`
(building httpx's request and response objects cost a fifth of a turn); a cassette
reaches the network through `AiohttpTransport`, the same session as an httpx transport.
Only live calls and recording load this module (and httpx with it): a replay needs
neither.

Behaviour kept from httpx's own transport: one pool of `max_connections` kept-alive
connections; proxies from `HTTP(S)_PROXY`/`NO_PROXY`; gzip and deflate bodies are
decompressed; aiohttp errors become the httpx exceptions the retry loop classifies
(timeouts and connection failures are retried, a bad URL is not).
"""

from __future__ import annotations

import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from functools import cache
from types import TracebackType
from typing import TYPE_CHECKING

import httpx

from turncheck.lazy import lazy_module
from turncheck.providers.reply import Reply

if TYPE_CHECKING:
    import aiohttp
else:  # loaded on first use: a replay never opens a connection
    aiohttp = lazy_module("aiohttp")

KEEPALIVE_SECONDS = 30.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The largest answer body accepted, counted after decompression (docs/providers.md)."""
_ENCODING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default verification context (certifi, `SSL_CERT_FILE`), built once."""
    return httpx.create_ssl_context(trust_env=True)


class AnswerTooLarge(httpx.DecodingError):
    """The answer body (after decompression) is over the limit; it was not read further.

    An `httpx.RequestError` that is not a transport error: the retry loop does not retry
    it (the same request would get the same answer) and fails that call with the message.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the answer is larger than the {limit:,}-byte limit (counted after "
            "decompression) and was refused"
        )


class AiohttpSession:
    """One `aiohttp.ClientSession` (created on first use: it needs a running event loop),
    with a keep-alive pool of `max_connections`. Use from one event loop."""

    def __init__(
        self,
        max_connections: int,
        ssl_context: ssl.SSLContext | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._max_connections = max_connections
        self._ssl_context = ssl_context
        self._max_answer_bytes = max_answer_bytes
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            keepalive_timeout=KEEPALIVE_SECONDS,
            ssl=self._ssl_context or default_ssl_context(),
        )
        # No cookies kept (httpx's client used to keep them; no provider needs them),
        # bodies decompressed (gzip, deflate: what the callers accept), and no headers
        # of aiohttp's own.
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | Sequence[tuple[str, str]],
        content: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> Reply:
        """Send one request and read the whole response; errors are httpx's exceptions."""
        with as_httpx_errors():
            async with self._request(method, url, headers, content, timeout) as response:
                content = await read_bounded(response, self._max_answer_bytes)
                return Reply(response.status, response.reason or "", response.headers, content)

    def stream(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> Streaming:
        """Send one request: `async with session.stream(...) as response`, its body unread
        (`bounded_chunks` reads it as it arrives). Errors, while sending or reading, are
        httpx's exceptions."""
        return Streaming(self._request(method, url, headers, content, timeout))

    def _request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | Sequence[tuple[str, str]],
        content: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        """The session's request, not yet sent (redirects not followed: a provider's answer
        is the answer; the proxy `HTTP(S)_PROXY` names)."""
        if self._session is None:
            self._session = self._open()
        return self._session.request(method, url, headers=headers, data=content or None,
                                     allow_redirects=False, timeout=timeout,
                                     proxy=self._proxy_for(url))

    def _proxy_for(self, url: str) -> str | None:
        """The proxy `HTTP(S)_PROXY` names for this URL unless `NO_PROXY` exempts its host
        (looked up once per URL: a provider posts to one or two)."""
        if url not in self._proxies:
            parts = urllib.parse.urlsplit(url)
            proxy = urllib.request.getproxies().get(parts.scheme)
            if proxy and urllib.request.proxy_bypass(parts.hostname or ""):
                proxy = None
            self._proxies[url] = proxy or None
        return self._proxies[url]

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The decompressed body, counted while it arrives: a gzip bomb is refused once its
    output passes `limit`, holding at most about `limit` plus one decompressed chunk."""
    length = response.content_length
    if length is not None and not response.headers.get("content-encoding"):
        if length > limit:
            raise AnswerTooLarge(limit)
        return await response.read()  # exactly `length` bytes: no count needed
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.content.iter_any():
        total += len(chunk)
        if total > limit:
            raise AnswerTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


class Streaming:
    """`AiohttpSession.stream`'s block (a class, not a generator: it is entered on every
    call the recording proxy forwards)."""

    def __init__(self, request: AbstractAsyncContextManager[aiohttp.ClientResponse]) -> None:
        self._request = request

    async def __aenter__(self) -> aiohttp.ClientResponse:
        with as_httpx_errors():
            return await self._request.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        with as_httpx_errors():
            await self._request.__aexit__(kind, error, traceback)
            if isinstance(error, Exception):
                raise error  # reading the body failed: as httpx's exception


async def bounded_chunks(response: aiohttp.ClientResponse, limit: int) -> AsyncIterator[bytes]:
    """The decompressed body chunk by chunk as it arrives, refused once past `limit`."""
    total = 0
    async for chunk in response.content.iter_any():
        total += len(chunk)
        if total > limit:
            raise AnswerTooLarge(limit)
        yield chunk


def client_timeout(seconds: float) -> aiohttp.ClientTimeout:
    """Each phase (pool wait, connect, every read) bounded, as `httpx.Timeout(seconds)`."""
    return aiohttp.ClientTimeout(
        total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
    )


class AiohttpTransport(httpx.AsyncBaseTransport):
    """`AiohttpSession` as an httpx transport (a cassette's way to the network)."""

    def __init__(self, max_connections: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self._session = AiohttpSession(max_connections, ssl_context)

    @property
    def session(self) -> AiohttpSession:
        """The session itself, for callers that need no httpx objects."""
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            reply = await self._session.request(
                request.method,
                str(request.url),
                request.headers.multi_items(),
                await request.aread(),
                _timeout_of(request),
            )
        except httpx.RequestError as exc:
            exc.request = request
            raise
        # The body is decompressed already: httpx must not decode it again.
        headers = [(k, v) for k, v in reply.headers.items() if k.lower() not in _ENCODING_HEADERS]
        return httpx.Response(
            reply.status_code,
            headers=headers,
            content=reply.content,
            extensions={"reason_phrase": reply.reason_phrase.encode("ascii", errors="replace")},
        )

    async def aclose(self) -> None:
        await self._session.aclose()


def _timeout_of(request: httpx.Request) -> aiohttp.ClientTimeout:
    """httpx's per-request timeouts (`extensions["timeout"]`) in aiohttp's terms."""
    timeout = request.extensions.get("timeout", {})
    return aiohttp.ClientTimeout(
        total=None,
        connect=timeout.get("pool"),
        sock_connect=timeout.get("connect"),
        sock_read=timeout.get("read"),
    )


@contextmanager
def as_httpx_errors() -> Iterator[None]:
    """aiohttp's exceptions as the httpx ones `JsonHttpClient` classifies."""
    try:
        yield
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise httpx.UnsupportedProtocol(str(exc) or type(exc).__name__) from exc
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "connect timed out") from exc
    except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
        raise httpx.ReadTimeout(str(exc) or "read timed out") from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc)) from exc
    except aiohttp.ServerDisconnectedError as exc:
        message = "server disconnected without sending a complete response"
        raise httpx.RemoteProtocolError(message) from exc
    except (aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
        raise httpx.RemoteProtocolError(str(exc)) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
