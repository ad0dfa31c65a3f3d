"""The network transport of every provider: httpx's request/response API over aiohttp.

Why aiohttp under httpx: at zero latency about two thirds of the engine's CPU went
to httpx's default transport stack (httpcore → anyio → h11: a cancel scope per I/O
timeout, sniffio task look-ups, pure-Python header parsing, a liveness check per
pooled connection). aiohttp does the same HTTP/1.1 keep-alive work with C parsers
and plain asyncio (see benchmarks/README.md). httpx stays the interface, so retries,
timeouts, `Retry-After`, cassettes (another httpx transport) and tests keep working.

Behaviour kept from httpx's own transport: one pool of `max_connections` kept-alive
connections; proxies from `HTTP(S)_PROXY`/`NO_PROXY`; the body is handed back still
encoded, and httpx decodes it (gzip, deflate, br) as before; aiohttp errors become the
httpx exceptions the retry loop classifies (timeouts and connection failures are
retried, a bad URL is not).
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import aiohttp
import httpx

KEEPALIVE_SECONDS = 30.0


@cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default verification context (certifi, `SSL_CERT_FILE`), built once."""
    return httpx.create_ssl_context(trust_env=True)


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An `httpx.AsyncBaseTransport` that sends requests with one `aiohttp.ClientSession`.

    The session is created on the first request (it needs a running event loop) and
    closed by `aclose`. Use from one event loop.
    """

    def __init__(self, max_connections: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self._max_connections = max_connections
        self._ssl_context = ssl_context
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[tuple[str, str], str | None] = {}

    def _open_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            keepalive_timeout=KEEPALIVE_SECONDS,
            ssl=self._ssl_context or default_ssl_context(),
        )
        # httpx keeps the cookies (as before); aiohttp must not add its own.
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._session is None:
            self._session = self._open_session()
        url = str(request.url)
        with _as_httpx_errors(request):
            async with self._session.request(
                request.method,
                url,
                headers=request.headers.multi_items(),
                data=request.content or None,
                allow_redirects=False,
                timeout=_timeout_of(request),
                proxy=self._proxy_for(request.url),
            ) as response:
                content = await response.read()
                headers = [(k.decode("latin-1"), v.decode("latin-1"))
                           for k, v in response.raw_headers]
                reason = response.reason or ""
        return httpx.Response(
            response.status,
            headers=headers,
            content=content,
            extensions={"reason_phrase": reason.encode("ascii", errors="replace")},
        )

    def _proxy_for(self, url: httpx.URL) -> str | None:
        """The proxy `HTTP(S)_PROXY` names for this origin unless `NO_PROXY` exempts it."""
        origin = (url.scheme, url.host)
        if origin not in self._proxies:
            proxies = urllib.request.getproxies()
            proxy = proxies.get(url.scheme)
            if proxy and urllib.request.proxy_bypass(url.host):
                proxy = None
            self._proxies[origin] = proxy or None
        return self._proxies[origin]

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


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
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    """aiohttp's exceptions as the httpx ones `JsonHttpClient` classifies."""
    try:
        yield
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise httpx.UnsupportedProtocol(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
    except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
        raise httpx.ReadTimeout(str(exc) or "read timed out", request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except aiohttp.ServerDisconnectedError as exc:
        message = "server disconnected without sending a complete response"
        raise httpx.RemoteProtocolError(message, request=request) from exc
    except (aiohttp.ClientPayloadError, aiohttp.ClientResponseError) as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
