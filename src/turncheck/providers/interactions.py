"""One recorded request and answer (`Interaction`) and the key a cassette finds it by.

Matching does not use vcrpy's patching or its linear matcher: interactions are
indexed by (method, full URL, body) where the body is canonical JSON
(`json.dumps(..., sort_keys=True, separators=(",", ":"))`, so key order does
not matter) or the raw bytes when it is not JSON. Lookups are O(1).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from turncheck.formats.templates import SECRET_TOKEN
from turncheck.providers.base import REPLAYED_EXTENSION, SECRET_PLACEHOLDER
from turncheck.providers.cassette_yaml import interaction_item
from turncheck.providers.reply import Reply

Key = tuple[str, str, bytes, int]
"""(method, URL, SHA-256 of the body's match form, sample): a digest, not the body, so
the index of a large cassette costs 32 bytes per request, not a second copy of it."""
Headers = list[tuple[str, str]]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def token_blind(body: str | bytes) -> str | bytes:
    """The match form of a body: a `<SECRET:NAME>` token matches a recording made before
    secrets were bound late, which holds the scrubbed value `<SECRET>` in its place."""
    if isinstance(body, str) and "<SECRET:" in body:
        return SECRET_TOKEN.sub(SECRET_PLACEHOLDER, body)
    return body


def body_digest(match_body: str | bytes) -> bytes:
    raw = match_body.encode("utf-8", "surrogatepass") if isinstance(match_body, str) \
        else match_body
    return hashlib.sha256(raw).digest()


@dataclass(frozen=True, slots=True)
class Interaction:
    """One scrubbed request/response pair."""

    key: Key
    method: str
    uri: str
    request_body: bytes
    request_headers: Headers
    status: int
    reason: str
    response_headers: Headers
    response_body: bytes

    def to_reply(self) -> Reply:
        """As replayed: header names lower-cased (look-ups ignore case, as httpx's do)."""
        headers = {name.lower(): value for name, value in self.response_headers}
        return Reply(self.status, self.reason, headers, self.response_body,
                     {REPLAYED_EXTENSION: True})

    def stored_parts(self) -> list[object]:
        return [
            self.uri,
            self.request_body,
            self.request_headers,
            self.reason,
            self.response_headers,
            self.response_body,
        ]

    def yaml_item(self) -> str:
        """This interaction's text in the cassette file (`cassette_yaml`)."""
        return interaction_item(*self._yaml_parts())

    def _yaml_parts(self) -> tuple[str, str, bytes, Headers, int, str, Headers, bytes]:
        return (self.method, self.uri, self.request_body, self.request_headers,
                self.status, self.reason, self.response_headers, self.response_body)
