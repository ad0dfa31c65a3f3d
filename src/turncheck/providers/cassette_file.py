"""A cassette file: where it lives and how its interactions are read, safely.

One cassette per suite, beside it: `math.eval.yaml` → `math.eval.cassette.yaml`
(see `cassette_path_for`); likewise one per sample file for its grader's calls.
The file is a vcrpy cassette (version 1), written and read as vcrpy's
serializer and its safe YAML loader do (`cassette_yaml`, `cassette_reader`), so
vcrpy tools can read it.

Cassettes from pull requests are untrusted: files over `max_bytes` (50 MiB),
nesting deeper than `MAX_YAML_DEPTH`, more than `MAX_YAML_ALIASES` aliases or
`MAX_INTERACTIONS` interactions are refused before or while parsing, and the
YAML is read with vcrpy's safe loader. Every problem is a `CassetteFormatError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from turncheck.formats.files import FileRefused, read_bytes_bounded
from turncheck.providers.base import ProviderError
from turncheck.providers.call_context import MAX_SAMPLE_INDEX, SAMPLE_HEADER
from turncheck.providers.cassette_reader import (
    CassetteShapeError,
    ReadLimits,
    iter_raw_interactions,
)
from turncheck.providers.interactions import Headers, Interaction, body_digest, token_blind
from turncheck.providers.scrubber import Scrubber

DEFAULT_MAX_CASSETTE_BYTES = 50 * 1024 * 1024
MAX_INTERACTIONS = 100_000
MAX_YAML_DEPTH = 64  # vcrpy cassettes nest about 6 deep; bodies are strings
MAX_YAML_ALIASES = 1_000
_LOADED_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


class CassetteFormatError(ProviderError):
    """The cassette file cannot be used (too big, not YAML, not a vcrpy cassette)."""


def cassette_path_for(suite_path: Path) -> Path:
    """`dir/name.eval.yaml` → `dir/name.eval.cassette.yaml` (`.yml` likewise); a sample
    file's: `dir/name.samples.toml` → `dir/name.samples.cassette.yaml`."""
    name = suite_path.name
    for suffix in (".yaml", ".yml", ".toml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return suite_path.with_name(f"{name}.cassette.yaml")


def file_signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_cassette(path: Path, max_bytes: int, scrubber: Scrubber,
                   shown: str) -> Iterator[Interaction]:
    """Parse a cassette safely, one interaction at a time; every problem becomes a
    `CassetteFormatError` naming the cassette as `shown`."""
    data = _read_capped(path, max_bytes, shown)
    if data is None:
        return
    limits = ReadLimits(MAX_YAML_DEPTH, MAX_YAML_ALIASES, MAX_INTERACTIONS)
    number = 0
    try:
        for request, response in iter_raw_interactions(data, limits):
            number += 1
            yield _from_vcr(request, response, scrubber)
    except CassetteShapeError as exc:
        raise CassetteFormatError(
            f"cassette {shown} is not a valid vcrpy cassette: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        message = f"cassette {shown}: interaction {number} is malformed ({exc})"
        raise CassetteFormatError(message) from None


def _read_capped(path: Path, max_bytes: int, shown: str) -> bytes | None:
    try:
        data = read_bytes_bounded(path, limit=max_bytes)
    except FileNotFoundError:
        return None
    except FileRefused as exc:
        if exc.code == "file-too-large":
            raise CassetteFormatError(
                f"cassette {shown} is larger than the {max_bytes:,}-byte limit and was not loaded"
            ) from None
        raise CassetteFormatError(f"cannot read cassette {shown}: {exc.message}") from None
    except OSError as exc:
        raise CassetteFormatError(f"cannot read cassette {shown}: {exc.strerror}") from None
    try:
        data.decode("utf-8")  # libyaml would accept UTF-16 too; vcrpy writes UTF-8
    except UnicodeDecodeError:
        raise CassetteFormatError(f"cassette {shown} is not UTF-8 text") from None
    return data


def _from_vcr(request: dict[Any, Any], response: dict[Any, Any], scrubber: Scrubber) -> Interaction:
    """One interaction from the request and response mappings vcrpy stores."""
    method, uri = _require_str(request["method"], "method"), _require_str(request["uri"], "uri")
    body = _as_bytes(request.get("body"), "request body")
    request_headers = _request_headers(request.get("headers") or {})
    key = (method.upper(), scrubber.url(uri), body_digest(token_blind(scrubber.body(body)[0])),
           _sample_of(dict(request_headers)))
    status = response["status"]
    code = status["code"]
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        raise ValueError(f"bad status code {code!r}")
    response_body = _as_bytes(response["body"]["string"], "response body")
    headers = [
        h
        for h in _response_headers(response["headers"])
        if h[0].lower() not in ("content-length", "transfer-encoding")
    ]
    return Interaction(
        key=key,
        method=method.upper(),
        uri=uri,
        request_body=body,
        request_headers=request_headers,
        status=code,
        reason=str(status.get("message") or ""),
        response_headers=[h for h in headers if h[0].lower() not in _LOADED_FRAMING_HEADERS],
        response_body=response_body,
    )


def _sample_of(headers: Any) -> int:
    """The sample index an interaction was recorded for (0 without the header)."""
    value = headers.get(SAMPLE_HEADER) if isinstance(headers, Mapping) else None
    if value is None:
        return 0
    if not isinstance(value, str) or not value.isdigit() or int(value) > MAX_SAMPLE_INDEX:
        raise ValueError(f"bad {SAMPLE_HEADER} header {value!r}")
    return int(value)


def _request_headers(raw: Any) -> Headers:
    """vcrpy keeps the first value of each request header."""
    if not isinstance(raw, dict):
        raise ValueError("request headers are not a mapping")
    headers: Headers = []
    for name, values in raw.items():
        value = values[0] if isinstance(values, list) and values else values
        headers.append((_require_str(name, "header name"), _require_str(value, "header")))
    return headers


def _response_headers(raw: Any) -> Headers:
    if not isinstance(raw, dict):
        raise ValueError("response headers are not a mapping")
    headers: Headers = []
    for name, values in raw.items():
        for value in values if isinstance(values, list) else [values]:
            headers.append((_require_str(name, "header name"), _require_str(value, "header")))
    return headers


def _require_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    return value


def _as_bytes(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise ValueError(f"{what} is not text")
