"""Replay keeps an app on the machine whatever its language (docs/targets.md, "Replay
stays on the machine").

In replay the app's environment names this endpoint as its HTTP proxy (`HTTP_PROXY`,
`HTTPS_PROXY`, `ALL_PROXY`, in both cases), with `NO_PROXY` covering this machine so
the recording proxy and the app's local services are reached directly. The HTTP clients
of most languages honour those variables (curl, Go's net/http, Python's urllib,
requests and httpx, Ruby's Net::HTTP, Node with `NODE_USE_ENV_PROXY`): they send the
request, or a `CONNECT` for HTTPS, here instead of to the host. This endpoint connects
nowhere: it answers every request 403 with an error naming the host, and notes the
`host:port` in the replay guard's file, as the Python guard notes its refusals, so the
turn errors naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from yarl import URL

from turncheck.targets.proxy_gate import (
    CappedServer,
    connection_cap,
    serve_on_loopback,
    server_logger,
)

ON_THIS_MACHINE = "127.0.0.1,localhost,::1,.localhost"
"""`NO_PROXY`: what the app still reaches directly."""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def refused_host(method: str, target: str, host_header: str | None) -> str:
    """The `host:port` a proxied request was for: a CONNECT's authority, an absolute
    URL's host, else the Host header."""
    if method == "CONNECT":
        return target[:200]
    url = URL(target) if "://" in target else None
    if url is not None and url.host:
        port = url.port or _DEFAULT_PORTS.get(url.scheme, 80)
        return f"{url.host}:{port}"[:200]
    host = host_header or "?"
    return (host if ":" in host else f"{host}:80")[:200]


class EgressRefuser:
    """The refusing HTTP proxy of one replay: `note` is told each refused `host:port`."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self._note = note
        self._runner: web.ServerRunner | None = None
        self.port = 0

    def env(self) -> dict[str, str]:
        """The proxy variables that send the app's outbound HTTP here."""
        url = f"http://127.0.0.1:{self.port}"
        env = {name: url for name in PROXY_VARIABLES}
        env |= {name.lower(): url for name in PROXY_VARIABLES}
        env |= {"NO_PROXY": ON_THIS_MACHINE, "no_proxy": ON_THIS_MACHINE,
                "NODE_USE_ENV_PROXY": "1"}
        return env

    async def start(self) -> None:
        server = CappedServer(self._refuse, access_log=None, logger=server_logger(),
                              cap=connection_cap(), on_refused=lambda: None)
        self._runner, self.port = await serve_on_loopback(server)

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _refuse(self, request: web.BaseRequest) -> web.StreamResponse:
        where = refused_host(request.method, _target_of(request), request.headers.get("Host"))
        self._note(where)
        return web.Response(status=403, headers={"Connection": "close"},
                            text=f"turncheck replay: connection to {where} refused: nothing "
                                 "leaves the machine in replay (docs/targets.md)\n")


def _target_of(request: web.BaseRequest) -> str:
    """The request line's target as the client sent it."""
    message: Any = request.message
    return str(getattr(message, "path", "") or request.raw_path)
