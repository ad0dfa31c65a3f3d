"""`http` targets: one request per user turn to the app's endpoint.

URL, headers and body are rendered in the sandboxed Jinja environment with the turn
(`messages`, `last_message`, `session_id`, `vars`). The reply's text is taken from its
JSON by a path, or is the whole body; a streamed reply (server-sent events, NDJSON, or a
plain chunked body) is assembled into one, and the time to its first byte is kept.
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from turncheck.formats.target import HttpTarget, SessionFromReply, places_session
from turncheck.providers.json_limits import loads_bounded
from turncheck.targets.base import (
    MAX_REPLY_BYTES,
    TURN_HEADER,
    AppGone,
    AppReply,
    Runtime,
    TargetError,
    Turn,
    at_path,
    tool_calls_of,
)

if TYPE_CHECKING:
    import aiohttp
    import jinja2

_WHOLE_VALUE = re.compile(r"^\{\{\s*([A-Za-z_]\w*)\s*\}\}$")
EXCERPT_CHARS = 300


class HttpKind:
    def __init__(self, spec: HttpTarget, session: SessionFromReply | str | None) -> None:
        self.spec = spec
        self.session_from = session.source if isinstance(session, SessionFromReply) else None
        self.session_header = self.session_from[1] if self.session_from is not None and \
            self.session_from[0] == "header" and not places_session(spec) else None
        """`session: {from: "header:NAME"}` with no template placing `session_id`: the id
        goes back in that header."""
        self._client: aiohttp.ClientSession | None = None
        self._env: jinja2.Environment | None = None
        self._runtime: Runtime | None = None

    async def start(self, runtime: Runtime) -> None:
        import aiohttp

        from turncheck.text.environment import sandboxed_environment

        self._runtime = runtime
        self._env = sandboxed_environment()
        # A connection per turn (force_close): what an app's server does with a
        # connection after a turn never reaches the next one. uvicorn answers an app's
        # exception with a whole HTTP 500 and then closes the connection; pooled, the
        # next eval's request went out on it and was reset ("Connection reset by peer",
        # ServerDisconnectedError). Its 5 s keep-alive, shorter than aiohttp's 15 s,
        # races the same way after a slow judge. Opening one on loopback costs
        # microseconds.
        self._client = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(force_close=True),
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=True)

    async def stop(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    def url(self, spec: HttpTarget | None = None) -> str:
        spec = spec or self.spec
        assert self._runtime is not None
        if spec.path is not None:
            return f"http://127.0.0.1:{self._runtime.port}{spec.path}"
        assert spec.url is not None
        return spec.url

    async def answer(self, turn: Turn) -> AppReply:
        context = turn.context()
        started = time.perf_counter()
        spec = self.spec
        raw, content_type, first_ms, session = await self._send(spec, turn, context, started)
        if spec.then is not None:  # the turn's second request sees the first's reply
            first = _json(raw)
            context = {**context, "first_reply": first if first is not None
                       else raw.decode("utf-8", "replace")}
            spec = spec.then
            raw, content_type, first_ms, then_session = await self._send(
                spec, turn, context, started)
            session = session or then_session
        reply = self._parse(raw, content_type, spec)
        return AppReply(reply.text, reply.tool_calls, session_id=session or reply.session_id,
                        first_token_ms=first_ms)

    async def _send(self, spec: HttpTarget, turn: Turn, context: dict[str, Any],
                    started: float) -> tuple[bytes, str, float | None, str | None]:
        """One request of the turn: its body, content type, milliseconds from the turn's
        start to its first byte, and the session id of its headers."""
        import aiohttp

        assert self._client is not None
        url = self._render(self.url(spec), context)
        headers = {name: self._render(value, context)
                   for name, value in (spec.headers or {}).items()}
        if turn.turn_id is not None:
            headers[TURN_HEADER] = turn.turn_id
        if self.session_header is not None and turn.session_id:
            headers[self.session_header] = turn.session_id
        body = None if spec.body is None else self._body(spec.body, context)
        data = body if isinstance(body, str) else None
        try:
            async with self._client.request(
                spec.method, url, headers=headers, data=data,
                json=None if data is not None or body is None else body,
                timeout=aiohttp.ClientTimeout(total=spec.timeout),
                allow_redirects=False,
            ) as response:
                raw, first_ms = await _read_capped(response, started)
                content_type = response.headers.get("content-type", "")
                if response.status >= 400:
                    raise TargetError(f"the app answered HTTP {response.status} to "
                                      f"{spec.method} {url}: {_excerpt(raw)}")
                return raw, content_type, first_ms, self._header_session(response)
        except TimeoutError:
            raise TargetError(f"the app did not answer {spec.method} {url} within "
                              f"{spec.timeout:g}s") from None
        except aiohttp.ClientError as exc:
            raise self._gone(url, exc) from None

    def _gone(self, url: str, exc: Exception) -> TargetError:
        return AppGone(f"cannot reach the app at {url}: {type(exc).__name__}: {exc}")

    def _render(self, text: str, context: dict[str, Any]) -> str:
        if "{{" not in text and "{%" not in text:
            return text
        assert self._env is not None
        try:
            return self._env.from_string(text).render(context)
        except Exception as exc:  # jinja2's errors, the sandbox's limits
            raise TargetError(f"the target's template {text[:80]!r} failed: {exc}") from None

    def _body(self, value: Any, context: dict[str, Any]) -> Any:
        if isinstance(value, str):
            whole = _WHOLE_VALUE.match(value)
            if whole is not None and whole[1] in context:
                return context[whole[1]]
            return self._render(value, context)
        if isinstance(value, dict):
            return {key: self._body(item, context) for key, item in value.items()}
        if isinstance(value, list):
            return [self._body(item, context) for item in value]
        return value

    def _header_session(self, response: aiohttp.ClientResponse) -> str | None:
        if self.session_from is None or self.session_from[0] != "header":
            return None
        return response.headers.get(self.session_from[1])

    def _parse(self, raw: bytes, content_type: str, spec: HttpTarget | None = None
               ) -> AppReply:
        """The reply of `spec` (by default the turn's first request: without `then`, its
        only one)."""
        spec = spec or self.spec
        if "event-stream" in content_type:
            return self._assembled(_sse_data(raw), spec)
        if "ndjson" in content_type or "jsonl" in content_type:
            return self._assembled([line for line in raw.splitlines() if line.strip()], spec)
        text = raw.decode("utf-8", "replace")
        if spec.reply is None and spec.tool_calls is None and \
                (self.session_from is None or self.session_from[0] != "json"):
            return AppReply(text)
        payload = _json(raw)
        if payload is None:
            raise TargetError(f"the app's reply is not JSON: {_excerpt(raw)}")
        return self._from_json(payload, text, spec)

    def _from_json(self, payload: Any, whole: str, spec: HttpTarget) -> AppReply:
        answer = whole if spec.reply is None else at_path(payload, spec.reply)
        if answer is None:
            raise TargetError(f'the app\'s reply has nothing at "{spec.reply}": '
                              f"{_excerpt(whole.encode())}")
        text = answer if isinstance(answer, str) else json.dumps(answer)
        calls = tool_calls_of(at_path(payload, spec.tool_calls)) if spec.tool_calls else ()
        return AppReply(text, calls, session_id=self._json_session(payload))

    def _json_session(self, payload: Any) -> str | None:
        if self.session_from is None or self.session_from[0] != "json":
            return None
        value = at_path(payload, self.session_from[1])
        return str(value) if isinstance(value, str | int) and not isinstance(value, bool) \
            else None

    def _assembled(self, pieces: list[bytes], spec: HttpTarget) -> AppReply:
        """A streamed reply in one: each piece's text (by `reply`'s path when it is JSON)."""
        texts: list[str] = []
        calls: tuple[Any, ...] = ()
        session = None
        for piece in pieces:
            payload = _json(piece)
            if payload is None:
                texts.append(piece.decode("utf-8", "replace"))
                continue
            session = session or self._json_session(payload)
            if spec.tool_calls:
                calls = calls or tool_calls_of(at_path(payload, spec.tool_calls))
            if spec.reply is None:
                texts.append(payload if isinstance(payload, str)
                             else piece.decode("utf-8", "replace"))
                continue
            value = at_path(payload, spec.reply)
            if isinstance(value, str):
                texts.append(value)
        return AppReply("".join(texts), calls, session_id=session)


async def _read_capped(response: aiohttp.ClientResponse, started: float
                       ) -> tuple[bytes, float | None]:
    """The whole body (at most `MAX_REPLY_BYTES`) and the milliseconds to its first byte."""
    chunks: list[bytes] = []
    size = 0
    first_ms = None
    async for chunk in response.content.iter_any():
        if first_ms is None:
            first_ms = round((time.perf_counter() - started) * 1000, 1)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise TargetError(f"the app's reply is larger than {MAX_REPLY_BYTES:,} bytes "
                              "and was refused")
        chunks.append(chunk)
    return b"".join(chunks), first_ms


def _sse_data(raw: bytes) -> list[bytes]:
    """The data of each server-sent event (multi-line data joined), `[DONE]` left out."""
    events: list[bytes] = []
    current: list[bytes] = []
    for line in [*raw.splitlines(), b""]:
        if not line.strip():
            if current:
                data = b"\n".join(current)
                if data.strip() != b"[DONE]":
                    events.append(data)
                current = []
        elif line.startswith(b"data:"):
            current.append(line[5:].removeprefix(b" "))
    return events


def _json(raw: bytes) -> Any:
    try:
        return loads_bounded(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _excerpt(raw: bytes) -> str:
    text = " ".join(raw[:2000].decode("utf-8", "replace").split())
    return text[:EXCERPT_CHARS] or "(empty body)"
