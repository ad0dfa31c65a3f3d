"""The recording proxy an app's own model calls go through (docs/targets.md).

An aiohttp web server on 127.0.0.1, on a free port. The app gets
`OPENAI_BASE_URL=http://127.0.0.1:PORT/openai/v1` and
`ANTHROPIC_BASE_URL=http://127.0.0.1:PORT/anthropic` with placeholder keys; whatever it
sends there (Chat Completions, Responses, embeddings, Messages; streamed or not) goes to
the upstream turncheck's own environment names (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`,
else the providers' defaults), with turncheck's own keys, which never enter the app's
environment.

Every exchange goes through the suite's cassette (`providers/cassettes.py`): the same
format, keys (the upstream URL, the canonical body, the sample), scrubbing, size caps and
secret rules as turncheck's own calls. A streamed answer (server-sent events, NDJSON) is
passed on to the app chunk by chunk as the upstream sends it, so the app's first token
comes when the upstream's does, and stored whole, as the bytes it was, so the app's SDK
parses in replay what it parsed when recording. In replay mode nothing leaves the
machine: a miss is answered with HTTP 400 (an SDK does not retry it) and noted in the
turn, which then ends in an error naming the request and the command that records it.

A recorded call costs about what passing it through does (benchmarks/targets.py): the
request is parsed once (its key and its model), the answer once (whether it is worth
keeping, its usage), secrets are looked for in the answer's own bytes, and its YAML is
written once, by `cassette_yaml`'s quick writer.

Attribution: a call is the turn's whose id its `X-Turncheck-Turn` header names (an http
app with `forwards_header` copies it from the turn's request, a python target's httpx
clients get it from turncheck); without the header, the one open turn's when the target
opens one at a time, else the open turn whose user messages the call carries
(`attribution.py`). A call that carries none of them while several turns are open
cannot be attributed: it is counted in the turn opened last, marked `turn_guessed`, and
the target is told (`on_unattributable`) so that it opens one turn at a time from then
on. Attributed, the turn's usage is the sum of its calls, and they are keyed by its
sample.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from aiohttp import web

from turncheck.providers.base import (
    NETWORK_GATE,
    REPLAYED_EXTENSION,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.call_context import current_sample, use_sample
from turncheck.providers.cassettes import Cassette
from turncheck.providers.json_limits import loads_bounded
from turncheck.providers.reply import Reply
from turncheck.providers.urls import as_sent
from turncheck.targets import attribution
from turncheck.targets.app_calls import with_record
from turncheck.targets.base import TURN_HEADER
from turncheck.targets.proxy_gate import (
    TOKEN_PREFIX,
    AnswerScrubber,
    CappedServer,
    RefusalLog,
    connection_cap,
    new_token,
    quiet_accept_errors,
    refusal,
    serve_on_loopback,
    server_logger,
)
from turncheck.targets.stream_usage import (
    UsageChunkFilter,
    usage_asked_body,
    without_asked_usage,
)
from turncheck.targets.usage import ModelCall, usage_of

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import aiohttp

    from turncheck.providers.aiohttp_transport import AiohttpSession
    from turncheck.providers.cassette_transport import Exchange

Api = Literal["openai", "anthropic"]
OPENAI_DEFAULT = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT = "https://api.anthropic.com"
PLACEHOLDER_KEY = TOKEN_PREFIX
"""How the key the app is given begins (the rest is made for the run, `proxy_gate.py`):
the proxy puts turncheck's own in its place upstream."""
MAX_REQUEST_BYTES = 16 * 1024 * 1024
UPSTREAM_TIMEOUT_S = 300.0
_PREFIXES: dict[str, Api] = {"/openai": "openai", "/anthropic": "anthropic"}
_FORWARDED_HEADERS = ("content-type", "anthropic-version", "anthropic-beta", "openai-beta",
                      "accept")
"""Request headers passed upstream: what the APIs read; not the SDK's telemetry headers
(which differ between SDK versions and would only bloat the cassette)."""
_RETURNED_HEADERS = ("content-type", "retry-after", "retry-after-ms")
"""Response headers handed to the app: what its SDK reads (the retry hints of a 429)."""
_UNPARSED: Any = object()
_REFUSED_OPTIONS = (400, 422)
"""What an upstream answers a request whose `stream_options` it does not accept."""
_REMEMBERED_URLS = 256


@dataclass
class TurnScope:
    """The model calls of one conversation turn."""

    sample: int
    gate: Callable[[], None] | None = None
    """The engine's budget gate of the turn (`NETWORK_GATE`): called before a call of the
    app's goes to the network, it reserves the turn's worst case or refuses."""
    calls: list[ModelCall] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused: ProviderError | None = None
    """What the gate raised (a budget stop): the turn ends with it, as the engine's own."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """The request (URL and body digest) of each of `errors`, in the same order."""
    texts: tuple[str, ...] = ()
    """The conversation's user messages up to this turn's, collapsed (`attribution.py`)."""

    def fail(self, request: tuple[str, str], message: str) -> None:
        self.errors.append(message)
        self.failed.append(request)

    def succeeded(self, request: tuple[str, str]) -> None:
        """A call that failed, retried by the app and answered, counts as the success it
        was: its earlier failures are no longer the turn's errors."""
        kept = [(r, e) for r, e in zip(self.failed, self.errors, strict=True) if r != request]
        self.failed = [r for r, _ in kept]
        self.errors[:] = [e for _, e in kept]

    def guarded_gate(self) -> Callable[[], None] | None:
        gate = self.gate
        if gate is None:
            return None

        def checked() -> None:
            try:
                gate()
            except ProviderError as exc:
                self.refused = exc
                raise

        return checked


@dataclass(frozen=True, slots=True)
class Upstreams:
    """Where the proxy forwards, and with which keys (turncheck's own environment)."""

    openai_base: str
    anthropic_base: str
    openai_key: str | None
    anthropic_key: str | None
    named: frozenset[Api] = frozenset({"openai", "anthropic"})
    """The APIs whose upstream was named (an option, the suite, the environment); a
    replayed call of another answers from whatever upstream it was recorded against."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], openai_base: str | None = None) -> Upstreams:
        """`openai_base` (the run's `--base-url` or the suite's `base_url`) wins over
        `OPENAI_BASE_URL`, as it does for turncheck's own OpenAI-compatible calls."""
        openai = openai_base or env.get("OPENAI_BASE_URL")
        anthropic = env.get("ANTHROPIC_BASE_URL")
        bases: tuple[tuple[Api, str | None], ...] = (("openai", openai),
                                                     ("anthropic", anthropic))
        named = frozenset(api for api, base in bases if base)
        return cls(
            (openai or OPENAI_DEFAULT).rstrip("/"),
            _anthropic_host(anthropic or ANTHROPIC_DEFAULT),
            env.get("OPENAI_API_KEY") or None,
            env.get("ANTHROPIC_API_KEY") or None,
            named,
        )

    def url(self, api: Api, rest: str) -> str:
        """The upstream URL of the app's path `rest` (after the proxy's API prefix)."""
        if api == "openai":
            return self.openai_base + rest.removeprefix("/v1")
        return self.anthropic_base + rest

    def auth(self, api: Api) -> dict[str, str]:
        if api == "openai":
            return {"authorization": f"Bearer {self.openai_key}"} if self.openai_key else {}
        return {"x-api-key": self.anthropic_key} if self.anthropic_key else {}


def _anthropic_host(url: str) -> str:
    """Anthropic's SDK takes the host and adds `/v1`; turncheck's provider accepts both."""
    return url.rstrip("/").removesuffix("/v1")


class RecordingProxy:
    """Start with `start()`, stop with `stop()`; `open_turn()` attributes calls."""

    def __init__(self, cassette: Cassette | None, upstreams: Upstreams) -> None:
        self._cassette = cassette
        self._upstreams = upstreams
        self._runner: web.ServerRunner | None = None
        self._live: AiohttpSession | None = None
        self._timeout: aiohttp.ClientTimeout | None = None
        self._urls: dict[tuple[str, str, str], str] = {}
        self._auth = {api: upstreams.auth(api) for api in ("openai", "anthropic")}
        self.token = new_token()
        self._refused_connections = 0
        self._log_refusal = RefusalLog()
        """The app's placeholder key: the proxy serves only requests bearing it."""
        self._scrub = AnswerScrubber([upstreams.openai_key, upstreams.anthropic_key])
        self.port = 0
        self.turn: TurnScope | None = None
        """The open turn, when turns are sent one at a time."""
        self.turns: dict[str, TurnScope] = {}
        """The open turns by id, when the target opens several at once."""
        self.by_content = True
        """Whether calls without a header are still attributed by the messages they
        carry (until one carries none of an open turn's)."""
        self.on_unattributable: Callable[[], None] | None = None
        """Called when a call carries no open turn's user messages."""
        self.unattributed: list[ModelCall] = []
        """Calls made outside any turn (while the app starts, say)."""
        self.refusals = 0
        self.last_refusal: str | None = None
        """Calls refused because no turn could be named (a missing or stale turn header):
        the app's failed turn is explained by the proxy's reason, not the app's 500."""

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/openai/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/anthropic"

    def app_env(self) -> dict[str, str]:
        """What the app is given to reach the proxy: base URLs and placeholder keys."""
        return {"OPENAI_BASE_URL": self.openai_base_url, "OPENAI_API_KEY": self.token,
                "ANTHROPIC_BASE_URL": self.anthropic_base_url,
                "ANTHROPIC_API_KEY": self.token}

    async def start(self) -> None:
        # aiohttp's low-level server: one handler for every path, so no application,
        # router or middleware chain to go through on each call.
        loop = asyncio.get_running_loop()

        def request_of(message: Any, payload: Any, protocol: Any, writer: Any,
                       task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop,
                                   client_max_size=MAX_REQUEST_BYTES)

        quiet_accept_errors(loop)
        server = CappedServer(self._handle, request_factory=request_of, access_log=None,
                              logger=server_logger(), cap=connection_cap(),
                              on_refused=self._too_many_connections)
        self._runner, self.port = await serve_on_loopback(server)

    def _too_many_connections(self) -> None:
        """The app holds more connections than the proxy serves at once: each open turn
        ends in an error saying so (once), and the log has one line."""
        message = (f"the app held more than {connection_cap()} connections to the "
                   "turncheck proxy at once; the rest were refused")
        scopes = [self.turn, *self.turns.values()]
        for scope in [s for s in scopes if s is not None and message not in s.errors]:
            scope.fail(("", "connections"), message)
        if not self._refused_connections:
            logger.warning("turncheck proxy: %s", message)
        self._refused_connections += 1

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        if self._live is not None:
            live, self._live = self._live, None
            await live.aclose()

    def open_turn(self, turn_id: str | None = None, texts: tuple[str, ...] = ()
                  ) -> TurnScope:
        """Attribute calls to a new turn, keyed by the caller's sample and gated by its
        budget gate (both context variables of the engine's task): the calls naming
        `turn_id` in their header or carrying its user messages `texts`, or without an id
        every call from now on."""
        scope = TurnScope(current_sample(), NETWORK_GATE.get(), texts=texts)
        if turn_id is None:
            self.turn = scope
        else:
            self.turns[turn_id] = scope
        return scope

    def close_turn(self, turn_id: str | None = None) -> None:
        if turn_id is None:
            self.turn = None
        else:
            self.turns.pop(turn_id, None)

    def _url_of(self, api: Api, rest: str, query: str) -> str:
        """The upstream URL as sent (remembered: an app posts to a few)."""
        url = self._urls.get((api, rest, query))
        if url is None:
            if len(self._urls) >= _REMEMBERED_URLS:
                self._urls.clear()
            url = self._urls[api, rest, query] = as_sent(
                self._upstreams.url(api, rest) + ("?" + query if query else ""))
        return url

    def _scope_of(self, request: web.BaseRequest, body: bytes) -> _Attributed:
        """The turn a call is attributed to, or why it cannot be."""
        turn_id = request.headers.get(TURN_HEADER)
        if turn_id is not None:
            scope = self.turns.get(turn_id)
            if scope is None:
                return _Attributed(None, f"turncheck proxy: {TURN_HEADER} {turn_id[:40]!r} "
                                         "names no turn being answered now")
            return _Attributed(scope)
        if not self.turns:
            return _Attributed(self.turn)
        return self._by_content(body)

    def _by_content(self, body: bytes) -> _Attributed:
        scopes = list(self.turns.values())
        if len(scopes) == 1 and not self.by_content:
            return _Attributed(scopes[0])
        messages = attribution.call_messages(body)
        found = attribution.owner(scopes, messages) if messages else None
        if found is not None:
            return _Attributed(found)
        if self.by_content:
            self.by_content = False
            if self.on_unattributable is not None:
                self.on_unattributable()
        if len(scopes) == 1:
            return _Attributed(scopes[0])
        return _Attributed(scopes[-1], guessed=True)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        reason = refusal(request.method, request.raw_path, request.headers, self.token)
        if reason is not None:
            self._log_refusal(request.method, request.raw_path, reason)
            return _error(403, reason)
        api, rest = _route(request.path)
        if api is None:
            return _error(404, f"the turncheck proxy serves /openai/... and /anthropic/..., "
                               f"not {request.path}")
        body = await request.read()
        try:  # the query as the app sent it: decoded, it could hold a line break
            url = self._url_of(api, rest, request.raw_path.partition("?")[2])
        except ValueError as exc:
            self._log_refusal(request.method, request.raw_path, str(exc))
            return _error(400, f"turncheck proxy: not a URL to send upstream: {exc}")
        scope, problem, guessed = self._scope_of(request, body)
        if problem is not None:
            self.refusals += 1
            self.last_refusal = problem
            return _error(400, problem)
        use_sample(scope.sample if scope is not None else 0)
        NETWORK_GATE.set(scope.guarded_gate() if scope is not None else None)
        asked = usage_asked_body(api, rest, body)
        call = _Call(request, api, rest, url, asked or body, scope, app_body=body,
                     usage_filter=UsageChunkFilter() if asked else None, guessed=guessed)
        try:
            return await self._answer(call)
        except RecordingMissing as exc:
            if scope is not None:
                scope.misses.append(exc.message)
            return _error(400, exc.message)
        except Exception as exc:  # every failure is the app's HTTP error, and the turn's
            if scope is not None and exc is scope.refused:  # a budget stop: not retried
                return _error(400, f"turncheck's budget refused this call: {exc}")
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if scope is not None:
                scope.fail(call.request_key, f"{request.method} {url}: {message}")
            if call.streaming is not None:  # part of it is out: the app sees it cut short
                if request.transport is not None:
                    request.transport.close()
                return call.streaming
            return _error(502, f"turncheck proxy: {message}")

    async def _answer(self, call: _Call) -> web.StreamResponse:
        answer = await self._answer_once(call)
        if call.usage_filter is not None and answer.status in _REFUSED_OPTIONS \
                and call.streaming is None:
            # An upstream that refuses `stream_options` (an older OpenAI-compatible
            # server): the app's own request instead, its usage then estimated.
            call.body, call.usage_filter = call.app_body, None
            return await self._answer_once(call)
        return answer

    async def _answer_once(self, call: _Call) -> web.StreamResponse:
        cassette = self._cassette
        method, url, body = call.request.method, call.url, call.body
        if cassette is not None and cassette.mode == "replay":
            any_base = call.api not in self._upstreams.named
            return self._whole(call, _replayed(cassette, call, any_base), _model_of(body))
        network = _network()
        sent = call.request.headers
        headers = {name: sent[name] for name in _FORWARDED_HEADERS if name in sent}
        headers.update(self._auth[call.api])
        if not isinstance(cassette, network.recording_class):
            return await self._forward(call, headers, body, None, _model_of(body))
        if cassette.sends_through_httpx:  # a test's transport: answers read whole
            reply = await cassette.reply_to(method, url, headers, body, UPSTREAM_TIMEOUT_S)
            return self._whole(call, reply, _model_of(body))
        async with cassette.exchange(method, url, headers, body) as exchange:
            if exchange.hit is not None:
                return self._whole(call, exchange.hit, exchange.model)
            return await self._forward(call, exchange.headers, exchange.body, exchange,
                                       exchange.model)

    async def _forward(self, call: _Call, headers: Mapping[str, str], body: bytes,
                       exchange: Exchange | None, model: str | None) -> web.StreamResponse:
        """Send the call upstream; pass a streamed answer on chunk by chunk, any other
        once read; record it (`exchange`) and count its usage."""
        network = _network()
        if self._live is None:
            self._live = network.session_class(max_connections=64)
            self._timeout = network.client_timeout(UPSTREAM_TIMEOUT_S)
        assert self._timeout is not None
        started = time.perf_counter()
        async with self._live.stream(call.request.method, call.url, headers, body,
                                     self._timeout) as upstream:
            returned = _returned_headers(upstream.headers)
            if _streamed(upstream.status, returned["content-type"]):
                response = call.streaming = web.StreamResponse(status=upstream.status,
                                                               headers=returned)
                await response.prepare(call.request)
                chunks: list[bytes] = []
                scrub = self._scrub.stream()
                async for chunk in network.bounded_chunks(upstream, network.max_answer_bytes):
                    if not chunks:
                        call.first_token_ms = (time.perf_counter() - started) * 1000
                    chunks.append(chunk)
                    if passed := scrub.feed(call.passed_on(chunk)):
                        await response.write(passed)
                if rest := scrub.feed(call.passed_on_end()):
                    await response.write(rest)
                await response.write_eof(scrub.end())
                content = b"".join(chunks)
            else:
                content = await network.read_bounded(upstream, network.max_answer_bytes)
            answer = Reply(upstream.status, upstream.reason or "", upstream.headers, content)
        latency_ms = (time.perf_counter() - started) * 1000
        parsed = _json_of(returned["content-type"], content)
        if exchange is not None:
            answer = exchange.keep(answer, latency_ms, parsed)
        self._count(call, model, answer, parsed, latency_ms)
        if call.streaming is not None:
            return call.streaming
        return web.Response(status=answer.status_code, body=self._scrub.whole(answer.content),
                            headers=returned)

    def _whole(self, call: _Call, reply: Reply, model: str | None) -> web.Response:
        """An answer read whole (from the cassette, or through a test's transport)."""
        self._count(call, model, reply, _UNPARSED)
        content = reply.content
        if call.usage_filter is not None and _streamed(reply.status_code,
                                                       reply.headers.get("content-type", "")):
            content = without_asked_usage(content)
        return web.Response(status=reply.status_code, body=self._scrub.whole(content),
                            headers=_returned_headers(reply.headers))

    def _count(self, call: _Call, model: str | None, reply: Reply, parsed: Any,
               total_ms: float | None = None) -> None:
        if not 200 <= reply.status_code < 300:
            return
        if call.scope is not None and call.scope.failed:
            call.scope.succeeded(call.request_key)
        content_type = reply.headers.get("content-type", "")
        parsed = parsed if isinstance(parsed, dict) else None
        usage = usage_of(call.api, call.rest, model, content_type, reply.content,
                         replayed=bool(reply.extensions.get(REPLAYED_EXTENSION)), parsed=parsed)
        usage = with_record(usage, call.api, call.rest, call.app_body, content_type, reply.content,
                            parsed, (call.first_token_ms, total_ms), call.guessed)
        scope = call.scope
        (scope.calls if scope is not None else self.unattributed).append(usage)


class _Attributed(NamedTuple):
    scope: TurnScope | None
    problem: str | None = None
    """Why the call is refused (a header naming no open turn)."""
    guessed: bool = False


class _Network:
    """What recording and live calls send with, imported on the first (a replay loads
    no aiohttp client, nor httpx)."""

    def __init__(self) -> None:
        from turncheck.providers import aiohttp_transport, cassette_transport

        self.recording_class = cassette_transport.CassetteTransport
        self.session_class = aiohttp_transport.AiohttpSession
        self.client_timeout = aiohttp_transport.client_timeout
        self.bounded_chunks = aiohttp_transport.bounded_chunks
        self.read_bounded = aiohttp_transport.read_bounded
        self.max_answer_bytes = aiohttp_transport.MAX_ANSWER_BYTES


@cache
def _network() -> _Network:
    return _Network()


@dataclass
class _Call:
    """One model call of the app's, while the proxy answers it."""

    request: web.BaseRequest
    api: Api
    rest: str
    url: str
    body: bytes
    scope: TurnScope | None
    streaming: web.StreamResponse | None = None
    """The answer being passed on chunk by chunk, once its first bytes are out."""
    first_token_ms: float | None = None
    app_body: bytes = b""
    """The request as the app sent it (`body`: as sent upstream, usage asked for)."""
    usage_filter: UsageChunkFilter | None = None
    """Set when the proxy asked for usage the app did not: takes it out of the stream."""
    guessed: bool = False
    """Counted in `scope` for want of a better turn (it carried no open turn's messages)."""

    def passed_on(self, chunk: bytes) -> bytes:
        return chunk if self.usage_filter is None else self.usage_filter.feed(chunk)

    def passed_on_end(self) -> bytes:
        return b"" if self.usage_filter is None else self.usage_filter.close()

    @property
    def request_key(self) -> tuple[str, str]:
        """The same request sent again (an SDK's retry) has the same key."""
        return self.url, hashlib.sha256(self.body).hexdigest()


def _replayed(cassette: Cassette, call: _Call, any_base: bool) -> Reply:
    """The recorded answer; for a call whose usage the proxy asks for, one recorded
    before it did (under the body the app sent) is found too."""
    method, url = call.request.method, call.url
    try:
        return cassette.replay_reply(method, url, call.body, None, any_base)
    except RecordingMissing:
        if call.usage_filter is None:
            raise
        return cassette.replay_reply(method, url, call.app_body, None, any_base)


def _returned_headers(headers: Mapping[str, str]) -> dict[str, str]:
    returned = {name: headers[name] for name in _RETURNED_HEADERS if name in headers}
    returned.setdefault("content-type", "application/json")
    return returned


def _streamed(status: int, content_type: str) -> bool:
    """Whether an answer is passed on chunk by chunk (server-sent events, JSON lines);
    anything else is read whole, then sent."""
    return 200 <= status < 300 and ("event-stream" in content_type or "ndjson" in content_type
                                    or "jsonl" in content_type or "json-seq" in content_type)


def _json_of(content_type: str, content: bytes) -> Any:
    """A JSON answer's value (None when it does not parse); `_UNPARSED` for others."""
    if "json" not in content_type or _streamed(200, content_type):
        return _UNPARSED
    try:
        return loads_bounded(content)
    except (ValueError, UnicodeDecodeError):
        return None


def _route(path: str) -> tuple[Api | None, str]:
    for prefix, api in _PREFIXES.items():
        if path.startswith(prefix + "/"):
            return api, path[len(prefix):]
    return None, path


def _model_of(body: bytes) -> str | None:
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return None
    model = payload.get("model") if isinstance(payload, dict) else None
    return model if isinstance(model, str) else None


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "turncheck_proxy"}},
                             status=status)


async def started_proxy(cassette: Cassette | None, env: Mapping[str, str]) -> RecordingProxy:
    proxy = RecordingProxy(cassette, Upstreams.from_env(env))
    await proxy.start()
    return proxy
