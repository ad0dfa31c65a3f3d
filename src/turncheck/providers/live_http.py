"""httpx's part of `JsonHttpClient`: how an attempt is sent when it may reach the network
(live calls over aiohttp, recording and tests' mock transports through an httpx
transport), and how httpx's exceptions are classified (aiohttp's are raised as httpx's,
aiohttp_transport.py).

A replay never imports this module, and so never loads httpx: its answers come from the
`Cassette` directly, and its only failures are `ProviderError`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

from turncheck.providers.aiohttp_transport import AiohttpSession, AnswerTooLarge, client_timeout
from turncheck.providers.reply import Failure, Reply, describe, timed_out
from turncheck.providers.secrets import SecretBinder

if TYPE_CHECKING:
    from turncheck.providers.cassettes import Cassette

# What `httpx.AsyncClient` sent by default, and the JSON content type.
DEFAULT_HEADERS = {
    "accept": "*/*",
    "accept-encoding": "gzip, deflate",
    "connection": "keep-alive",
    "user-agent": f"python-httpx/{httpx.__version__}",
    "content-type": "application/json",
}
_NOT_RETRIED_TRANSPORT_ERRORS = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


class LiveSender:
    """Sends `JsonHttpClient`'s attempts: live calls straight to aiohttp, with a pool as
    large as the requests allowed in flight; with a transport (a recording cassette, a
    test's mock), through it, without an `httpx.AsyncClient` (URL merging, cookie jar,
    auth and redirect flows cost a quarter of a turn's CPU)."""

    def __init__(
        self,
        transport: Cassette | httpx.AsyncBaseTransport | None,
        max_in_flight: int,
        timeout: float,
        binder: SecretBinder | None,
    ) -> None:
        self._transport = _httpx_transport(transport)
        self._network = AiohttpSession(max_in_flight) if transport is None else None
        self._network_timeout = client_timeout(timeout) if transport is None else None
        self._binder = binder
        self._urls: dict[str, httpx.URL] = {}

    async def post(
        self, url: str, content: bytes, headers: Mapping[str, str], extensions: dict[str, Any]
    ) -> Reply:
        """POST to the network, or through the transport; the reply is read."""
        all_headers = {**DEFAULT_HEADERS, **headers}
        if self._network is not None:
            if self._binder:  # the one place a secret's value enters a live request
                all_headers, content = self._binder.bind(all_headers, content)
            assert self._network_timeout is not None
            return await self._network.request(
                "POST", url, all_headers, content, self._network_timeout
            )
        assert self._transport is not None
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx.URL(url)
        request = httpx.Request(
            "POST", parsed, headers=all_headers, content=content, extensions=extensions
        )
        response = await self._transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return Reply.of(response)

    async def aclose(self) -> None:
        """Closes the network pool; the transport is its owner's to close."""
        if self._network is not None:
            await self._network.aclose()


def _httpx_transport(
    transport: Cassette | httpx.AsyncBaseTransport | None,
) -> httpx.AsyncBaseTransport | None:
    if transport is None or isinstance(transport, httpx.AsyncBaseTransport):
        return transport
    raise TypeError(f"a {type(transport).__name__} cannot record: a recording cassette is a "
                    "CassetteTransport")


def failure_of(exc: Exception, timeout: float) -> Failure | None:
    """The failed attempt `exc` stands for, or None when it is no failure to send (the
    caller re-raises it). Timeouts and connection errors are retried; an answer over the
    size limit, a bad URL or an unsupported protocol is not."""
    if isinstance(exc, httpx.TimeoutException):
        return timed_out(timeout)
    if isinstance(exc, AnswerTooLarge):  # the same request would get the same answer
        return Failure("answer too large", str(exc), retryable=False)
    if isinstance(exc, _NOT_RETRIED_TRANSPORT_ERRORS):
        return Failure("request failed", describe(exc), retryable=False)
    if isinstance(exc, httpx.TransportError):
        return Failure("connection error", describe(exc), retryable=True)
    if isinstance(exc, httpx.HTTPError | httpx.InvalidURL):
        return Failure("request failed", describe(exc), retryable=False)
    return None
