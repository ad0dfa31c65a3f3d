"""Usage for a streamed Chat Completions call that does not ask for it (OpenAI's
quickstart: `stream=True`, no `stream_options`), without the app seeing a difference
(docs/targets.md, "Usage and cost").

The proxy sends such a call upstream with `stream_options.include_usage` set, so the
upstream reports its usage, and hands the app the stream it would have had without it:
the extra usage chunk left out and the `"usage": null` OpenAI adds to every other chunk
taken out again, byte for byte. The cassette keeps what the upstream sent (usage
included), so a replay counts exactly too; a recording made before this asked for no
usage, and is still found under the body the app sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from turncheck.providers.json_limits import loads_bounded

_NULL_USAGE = (re.compile(rb',\s*"usage"\s*:\s*null(?=\s*[,}])'),
               re.compile(rb'(?<=\{)\s*"usage"\s*:\s*null\s*,'))
_EVENT_END = re.compile(rb"\r?\n\r?\n")


def usage_asked_body(api: str, path: str, body: bytes) -> bytes | None:
    """The body to send upstream instead of `body`: a streamed Chat Completions request
    that does not ask for usage, asking for it; None for any other request."""
    if api != "openai" or not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
        return None
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict) or payload.get("stream") is not True:
        return None
    options = payload.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return None
    if options and options.get("include_usage") is not None:
        return None  # the app chose: asked for usage, or said no
    payload["stream_options"] = {**(options or {}), "include_usage": True}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


class UsageChunkFilter:
    """Takes the usage the proxy asked for out of a server-sent event stream, fed in the
    chunks it arrives in; complete events are passed on as they end."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        self._pending += chunk
        kept: list[bytes] = []
        start = 0
        for end in _EVENT_END.finditer(self._pending):
            event = self._pending[start:end.start()]
            passed = _without_usage(event)
            if passed or not event:
                kept.append(passed + end.group())
            start = end.end()
        self._pending = self._pending[start:]
        return b"".join(kept)

    def close(self) -> bytes:
        rest, self._pending = self._pending, b""
        return _without_usage(rest) if rest.strip() else rest


def without_asked_usage(content: bytes) -> bytes:
    """A whole stream as the app would have had it without asking for usage."""
    filtered = UsageChunkFilter()
    return filtered.feed(content) + filtered.close()


def _without_usage(event: bytes) -> bytes:
    """One event without the usage the proxy asked for: the usage chunk (no choices, a
    usage) is left out; any other chunk loses its `"usage": null`. An event that does not
    read as such a chunk is passed on as it is."""
    data = _data_of(event)
    if data is None or not isinstance(data, dict) or "usage" not in data:
        return event
    if data.get("choices") == [] and data.get("usage") is not None:
        return b""
    if data["usage"] is not None:
        return event
    for pattern in _NULL_USAGE:
        stripped = pattern.sub(b"", event, count=1)
        if stripped != event and _same_without_usage(stripped, data):
            return stripped
    return event


def _data_of(event: bytes) -> Any:
    lines = [line for line in event.splitlines() if line.startswith(b"data:")]
    if len(lines) != 1:
        return None
    try:
        return loads_bounded(lines[0][5:].strip())
    except (ValueError, UnicodeDecodeError):
        return None


def _same_without_usage(stripped: bytes, data: dict[str, Any]) -> bool:
    expected = {key: value for key, value in data.items() if key != "usage"}
    return bool(_data_of(stripped) == expected)

