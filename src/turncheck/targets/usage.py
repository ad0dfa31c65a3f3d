"""The usage an app's model call reports, read from the answer the proxy passed on.

OpenAI Chat Completions (`usage.prompt_tokens`, streamed: the last chunk when the app
asked for `stream_options.include_usage`), the Responses API (`usage.input_tokens`,
streamed: the `response.completed` event), embeddings, and Anthropic Messages
(`usage.input_tokens` plus the cache's, streamed: `message_start` then the cumulative
`message_delta`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from turncheck.providers.json_limits import loads_bounded
from turncheck.report.app_calls import AppCall

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call the app made through the proxy during a turn."""

    api: str
    """`openai` or `anthropic`: the upstream, and the price table's provider id."""
    path: str
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int = 0
    replayed: bool = False
    record: AppCall | None = None
    """What the call sent and got (`targets/app_calls.py`), for the report."""
    estimated: bool = False
    """The answer reported no usage: the tokens are turncheck's estimate from the text."""

    @property
    def reported(self) -> bool:
        return self.input_tokens is not None and not self.estimated


@dataclass
class _Counts:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: int = 0
    model: str | None = None


def usage_of(api: str, path: str, request_model: str | None, content_type: str, body: bytes,
             *, replayed: bool, parsed: Any = None) -> ModelCall:
    """The call's usage as its answer reports it (None counts when it reports none).
    `parsed`: the JSON body's value, when the caller has parsed it already."""
    counts = _Counts(model=request_model)
    payloads = answer_payloads(content_type, body, parsed)
    for payload in payloads:
        _absorb(counts, payload)
    return ModelCall(api, path, counts.model, counts.input_tokens, counts.output_tokens,
                     counts.cached, replayed)


def answer_payloads(content_type: str, body: bytes, parsed: Any = None) -> list[JsonObject]:
    """The JSON objects of an answer: `parsed` when the caller already read it whole, else
    each event of a stream, or the body's one object."""
    return [parsed] if isinstance(parsed, dict) else list(_payloads(content_type, body))


def _payloads(content_type: str, body: bytes) -> Iterator[JsonObject]:
    if "event-stream" in content_type:
        yield from sse_json(body)
        return
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return
    if isinstance(payload, dict):
        yield payload


def sse_json(body: bytes) -> Iterator[JsonObject]:
    """The JSON objects in the `data:` lines of a server-sent event stream."""
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            continue
        try:
            payload = loads_bounded(data)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(payload, dict):
            yield payload


def _absorb(counts: _Counts, payload: JsonObject) -> None:
    """Take what one answer or event says about usage and the model."""
    kind = payload.get("type")
    if kind == "message_start" and isinstance(payload.get("message"), dict):
        _absorb(counts, payload["message"])
        return
    if isinstance(kind, str) and kind.startswith("response.") and \
            isinstance(payload.get("response"), dict):
        _absorb(counts, payload["response"])
        return
    if isinstance(payload.get("model"), str):
        counts.model = payload["model"]
    usage = payload.get("usage")
    if isinstance(usage, dict):
        _usage(counts, usage)


def _usage(counts: _Counts, usage: JsonObject) -> None:
    if "prompt_tokens" in usage:  # Chat Completions, embeddings
        counts.input_tokens = _int(usage.get("prompt_tokens"))
        counts.output_tokens = _int(usage.get("completion_tokens")) or 0
        counts.cached = _int(_get(usage, "prompt_tokens_details", "cached_tokens")) or 0
        return
    if "input_tokens" in usage and ("input_tokens_details" in usage
                                    or "total_tokens" in usage):  # Responses
        counts.input_tokens = _int(usage.get("input_tokens"))
        counts.output_tokens = _int(usage.get("output_tokens"))
        counts.cached = _int(_get(usage, "input_tokens_details", "cached_tokens")) or 0
        return
    # Anthropic: input_tokens leaves out the cache's; output_tokens is cumulative.
    read = _int(usage.get("cache_read_input_tokens")) or 0
    written = _int(usage.get("cache_creation_input_tokens")) or 0
    if "input_tokens" in usage:
        counts.input_tokens = (_int(usage.get("input_tokens")) or 0) + read + written
        counts.cached = read
    if "output_tokens" in usage:
        counts.output_tokens = _int(usage.get("output_tokens"))


def _get(mapping: JsonObject, *keys: str) -> Any:
    value: Any = mapping
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None
