"""What the recording proxy serves, and what the app gets back (docs/targets.md, "What
the proxy relays").

The proxy sends the app's calls upstream with turncheck's own keys, so it relays only
the model APIs a suite can use, with their documented method: `POST` Chat Completions,
Responses and embeddings (OpenAI), Messages and its token count (Anthropic), each at
exactly its path under the proxy's prefix. The path is compared as the app sent it,
undecoded, so `..`, `%2e%2e`, `//` or an encoded line break never reach the upstream's
URL. Only the app turncheck started is served: its placeholder key is a token made for
the run (`new_token`), which its SDK sends as its API key; another local process does
not know it. Everything else is answered 403 with one line in the log.

Whatever the upstream answers, the app never gets turncheck's keys back: an answer (an
error's too, in every mode) has every form of them replaced (`AnswerScrubber`), a
streamed one chunk by chunk.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aiohttp import web

from turncheck.providers.secret_forms import FormRedactor
from turncheck.targets.ports import server_socket

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "turncheck-proxy-placeholder-key"
SERVED: frozenset[str] = frozenset({
    "POST /openai/v1/chat/completions",
    "POST /openai/v1/responses",
    "POST /openai/v1/embeddings",
    "POST /anthropic/v1/messages",
    "POST /anthropic/v1/messages/count_tokens",
})
"""Each model API call the proxy relays: its method and its path as the app sends it."""
REDACTED = "[REDACTED]"
MIN_KEY_CHARS = 8


def new_token() -> str:
    """The app's placeholder key for one run: the proxy serves only requests bearing it."""
    return f"{TOKEN_PREFIX}-{secrets.token_urlsafe(24)}"


def refusal(method: str, raw_path: str, headers: Mapping[str, str], token: str
            ) -> str | None:
    """Why the proxy refuses a request (None: it serves it)."""
    path = raw_path.split("?", 1)[0]
    if f"{method} {path}" not in SERVED:
        return (f"the turncheck proxy relays only model API calls (POST chat/completions, "
                f"responses, embeddings; messages), not {method} {path[:200]!r}")
    if not _bears(headers, token):
        return ("the turncheck proxy serves only the app turncheck started (its API key is "
                "the placeholder key turncheck gave it)")
    return None


def _bears(headers: Mapping[str, str], token: str) -> bool:
    bearer = headers.get("authorization", "")
    sent = [headers.get("x-api-key", ""), bearer.removeprefix("Bearer ").strip()]
    return any(hmac.compare_digest(value.encode(errors="replace"), token.encode())
               for value in sent if value)


MAX_LOGGED_REFUSALS = 20
"""Refusals logged per proxy: an app sending a million requests does not write a million
lines (the count goes on in the last line)."""


class RefusalLog:
    """One warning line per refused request, up to `MAX_LOGGED_REFUSALS`."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, method: str, raw_path: str, reason: str) -> None:
        self.count += 1
        if self.count <= MAX_LOGGED_REFUSALS:
            logger.warning("turncheck proxy: refused %s %r: %s", method[:20],
                           raw_path[:200], reason)
        if self.count == MAX_LOGGED_REFUSALS:
            logger.warning("turncheck proxy: %d requests refused; further refusals are "
                           "not logged", self.count)


class AnswerScrubber:
    """Every form of turncheck's keys (`secret_forms`) replaced in what the app gets."""

    def __init__(self, keys: Iterable[str | None]) -> None:
        self._redactor = FormRedactor([k for k in keys if k], REDACTED, MIN_KEY_CHARS)
        self._forms = [form.encode() for form in self._redactor.forms]
        self._form_bytes = frozenset(b"".join(self._forms))

    def __bool__(self) -> bool:
        return bool(self._redactor)

    def whole(self, content: bytes) -> bytes:
        if not self._redactor:
            return content
        text = content.decode("utf-8", "surrogateescape")
        return self._redactor.text(text).encode("utf-8", "surrogateescape")

    def stream(self) -> StreamScrubber:
        return StreamScrubber(self)

    def held_back(self, data: bytes) -> int:
        """How many bytes at the end of `data` could begin a key's form: they wait for
        the next chunk, so a key split between two chunks is still found."""
        if not data or data[-1] not in self._form_bytes:
            return 0  # a stream's chunk ends an event ("\n\n"): nothing to hold
        longest = 0
        for form in self._forms:
            for size in range(min(len(form) - 1, len(data)), longest, -1):
                if data.endswith(form[:size]):
                    longest = size
                    break
        return longest


class StreamScrubber:
    """A streamed answer scrubbed chunk by chunk: `feed` returns what may go out now."""

    def __init__(self, scrubber: AnswerScrubber) -> None:
        self._scrubber = scrubber
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._scrubber:
            return chunk
        data = self._scrubber.whole(self._pending + chunk)
        held = self._scrubber.held_back(data)
        self._pending = data[len(data) - held:] if held else b""
        return data[:len(data) - held] if held else data

    def end(self) -> bytes:
        rest, self._pending = self._pending, b""
        return self._scrubber.whole(rest) if rest else b""


class _OneLine(logging.Filter):
    """aiohttp logs a request it cannot parse (a line break or a space in the path, a
    bad header) with its traceback; here it is one warning line, the request's fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            problem = " ".join(str(record.exc_info[1]).split())[:200]
            record.msg = f"turncheck proxy: refused a malformed request: {problem}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def server_logger() -> logging.Logger:
    """The logger of the proxy's HTTP server: every problem one line, no traceback."""
    server = logging.getLogger("turncheck.proxy.server")
    if not any(isinstance(f, _OneLine) for f in server.filters):
        server.addFilter(_OneLine())
    return server


MAX_CONNECTIONS = 512
"""The most connections the app may hold to the proxy at once (an SDK's pool holds a
few dozen): more would take the file descriptors turncheck needs for its own work."""


def connection_cap() -> int:
    """`MAX_CONNECTIONS`, or a quarter of this process's descriptor limit when lower."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft // 4))


class CappedServer(web.Server):
    """aiohttp's low-level server, refusing a connection over `cap` open ones: it is
    closed at once and `on_refused` is told."""

    def __init__(self, *args: Any, cap: int, on_refused: Callable[[], None],
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cap = cap
        self._on_refused = on_refused

    def __call__(self) -> Any:
        if len(self.connections) >= self.cap:
            self._on_refused()
            return _Refused()
        return super().__call__()


async def serve_on_loopback(server: web.Server) -> tuple[web.ServerRunner, int]:
    """`server` listening on a free port of 127.0.0.1: its runner (to clean up) and port."""
    runner = web.ServerRunner(server, handle_signals=False)
    await runner.setup()
    listening = server_socket()
    await web.SockSite(runner, listening).start()
    return runner, int(listening.getsockname()[1])


class _Refused(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Out of descriptors, asyncio logs each failed `accept()` of a server with its
    traceback; here it is one warning line (the turn that caused it fails on its own
    calls with a clear error). Other problems go to the loop's handler as before."""
    previous = loop.get_exception_handler()
    if getattr(previous, "turncheck_quiet", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        problem = context.get("exception")
        if isinstance(problem, OSError) and "accept" in str(context.get("message", "")):
            logger.warning("turncheck proxy: cannot accept a connection: %s (out of file "
                           "descriptors?)", problem.strerror or problem)
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.turncheck_quiet = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)
