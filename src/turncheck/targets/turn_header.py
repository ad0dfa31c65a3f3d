"""A python target's model calls name their turn: the `X-Turncheck-Turn` header, added
by turncheck, so that several turns run at once and each call still counts in its own.

The function runs in turncheck's process (or the function worker's) and builds its own
client, so turncheck cannot hand it a header. It can mark the request: `Client.send` and
`AsyncClient.send` of httpx and httpx2 (what the official openai and anthropic SDKs send
through) are wrapped once to add the header of the turn being answered in the calling context —
a context variable, which follows the turn into the tasks it starts and, through
`contextvars.copy_context`, into the worker thread of a sync function — to requests for
the recording proxy only. A call made with another HTTP client reaches the proxy without
the header and is counted in its turn by the user messages it carries (docs/targets.md,
"Concurrent turns"). The same
wrapper puts the proxy's placeholder key on those requests: a function run in
turncheck's process builds its client from turncheck's environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from turncheck.targets.base import TURN_HEADER

_TURN: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar("turncheck_turn",
                                                                 default=None)
"""The turn being answered in this context and the proxy's `host:port`s."""
_installed = False


def proxy_addresses(urls: Any) -> frozenset[str]:
    """The `host:port` of each of the proxy's base URLs."""
    found = set()
    for url in urls:
        parts = urlsplit(str(url))
        if parts.hostname and parts.port:
            found.add(f"{parts.hostname}:{parts.port}")
    return frozenset(found)


@contextlib.contextmanager
def naming_turn(turn_id: str | None, proxy: frozenset[str]) -> Iterator[None]:
    """Requests to `proxy` sent in this context (and the tasks and threads it starts)
    carry `turn_id`; nothing is added without one (turns one at a time)."""
    if turn_id is None:
        yield
        return
    token = _TURN.set((turn_id, proxy))
    try:
        yield
    finally:
        _TURN.reset(token)


HTTPX_MODULES = ("httpx", "httpx2")
"""httpx, and its successor the current openai and anthropic SDKs send through."""


def install() -> None:
    """Wrap `send` of each installed httpx once (importing it if need be)."""
    global _installed
    if _installed:
        return
    for name in HTTPX_MODULES:
        if importlib.util.find_spec(name) is not None:
            _wrap(importlib.import_module(name))
    _installed = True


def _wrap(httpx: Any) -> None:
    sync_send, async_send = httpx.Client.send, httpx.AsyncClient.send

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        _mark(request)
        return sync_send(self, request, **kwargs)

    async def asend(self: Any, request: Any, **kwargs: Any) -> Any:
        _mark(request)
        return await async_send(self, request, **kwargs)

    httpx.Client.send = send
    httpx.AsyncClient.send = asend


def _mark(request: Any) -> None:
    address = f"{request.url.host}:{request.url.port}"
    token = _PROXY_TOKENS.get(address)
    if token is not None:
        _bear(request.headers, token)
    current = _TURN.get()
    if current is None:
        return
    turn_id, proxy = current
    if address in proxy and TURN_HEADER not in request.headers:
        request.headers[TURN_HEADER] = turn_id


_PROXY_TOKENS: dict[str, str] = {}
"""The placeholder key each proxy (`host:port`) serves: a function run in this process
reads turncheck's environment, whose keys are not the proxy's."""


def register_proxy(addresses: frozenset[str], token: str | None) -> None:
    """Calls to the proxy at `addresses` from this process bear `token` as their key."""
    if token:
        _PROXY_TOKENS.update(dict.fromkeys(addresses, token))


def _bear(headers: Any, token: str) -> None:
    if "x-api-key" in headers:
        headers["x-api-key"] = token
    if "authorization" in headers or "x-api-key" not in headers:
        headers["authorization"] = f"Bearer {token}"
