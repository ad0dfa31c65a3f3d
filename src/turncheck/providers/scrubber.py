"""Secrets out of what a cassette stores and matches.

Scrubbing happens before anything is stored or matched: the headers in
`DROPPED_HEADERS` are removed from requests and responses, and every secret
value is replaced by `SECRET_PLACEHOLDER` in URLs, header values and bodies.
Keys are computed on the scrubbed request, so a replay run whose prompt renders
an unavailable secret as `<SECRET>` still matches. Record mode returns exactly
what replay will return later (the scrubbed, decompressed response).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from turncheck.providers.base import MIN_SECRET_LENGTH, SECRET_PLACEHOLDER
from turncheck.providers.interactions import Headers, Interaction, canonical_json
from turncheck.providers.json_limits import JsonTooDeep, loads_bounded
from turncheck.providers.secret_forms import FormRedactor

DROPPED_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "openai-organization", "cookie", "set-cookie"}
)
_REMEMBERED_TEXT_CHARS = 256
_REMEMBERED_TEXTS = 4096


class Scrubber:
    """Replaces secret values, in every form `secret_forms` lists, by `SECRET_PLACEHOLDER`;
    idempotent."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        self.secrets = sorted(unique, key=lambda s: (-len(s), s))
        self._secret_bytes = [secret.encode() for secret in self.secrets]
        self._texts: dict[str, str] = {}
        self._forms = FormRedactor(unique, SECRET_PLACEHOLDER, MIN_SECRET_LENGTH)
        # `forms` holds each form JSON-escaped as well: what canonical JSON shows.
        self._json_forms = self._forms.forms
        self._url_forms = sorted(
            {f for s in self._forms.forms for f in (s, quote(s, safe=""), quote_plus(s))},
            key=lambda f: (-len(f), f),
        )

    def text(self, value: str) -> str:
        if not self._forms:
            return value
        if len(value) > _REMEMBERED_TEXT_CHARS:
            return self._forms.text(value)
        scrubbed = self._texts.get(value)
        if scrubbed is None:  # header values repeat on every call: each is searched once
            if len(self._texts) >= _REMEMBERED_TEXTS:
                self._texts.clear()
            scrubbed = self._texts[value] = self._forms.text(value)
        return scrubbed

    def url(self, url: str) -> str:
        for form in self._url_forms:
            if form in url:
                url = url.replace(form, SECRET_PLACEHOLDER)
        return url

    def headers(self, headers: Iterable[tuple[str, str]]) -> Headers:
        return [
            (name, self.text(value))
            for name, value in headers
            if name.lower() not in DROPPED_HEADERS
        ]

    def body(self, raw: bytes) -> tuple[str | bytes, bytes]:
        """(the form used for matching, the scrubbed bytes to store)."""
        match, stored, _ = self.parsed_body(raw)
        return match, stored

    def parsed_body(self, raw: bytes) -> tuple[str | bytes, bytes, Any]:
        """`body`, and the JSON value `raw` holds (None when it is not JSON)."""
        try:
            parsed = loads_bounded(raw)
        except JsonTooDeep:
            raise
        except (ValueError, UnicodeDecodeError):
            scrubbed = self._raw_bytes(raw)
            return scrubbed, scrubbed, None
        canonical = canonical_json(parsed)
        if not self._forms.found_in_json(canonical):
            return canonical, raw, parsed
        cleaned = self._json_value(parsed)
        stored = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode()
        return canonical_json(cleaned), stored, parsed

    def answer_body(self, raw: bytes) -> bytes:
        """An answer's body as stored: `raw` itself when no form of a secret is in it.

        The forms are looked for in `raw` itself when its JSON escapes are those
        canonical JSON writes (no `\\u`, no `\\/`: every string then reads the same
        in both), which spares parsing and dumping each answer; otherwise as `body`."""
        if not self._forms:
            return raw
        if b"\\u" not in raw and b"\\/" not in raw:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return self._raw_bytes(raw)
            if not self._forms.found_in_json(text):
                return raw
        return self.body(raw)[1]

    def leaks_into_interaction(self, interaction: Interaction) -> bool:
        """`leaks_into(interaction.stored_parts())`, without walking nested lists."""
        if not self.secrets:
            return False
        strings = [interaction.uri, interaction.reason]
        for name, value in (*interaction.request_headers, *interaction.response_headers):
            strings += (name, value)
        bodies = (interaction.request_body, interaction.response_body)
        return any(secret in text for secret in self.secrets for text in strings) or any(
            secret in body for secret in self._secret_bytes for body in bodies)

    def leaks_into(self, value: object) -> bool:
        """Whether any string (or bytes) inside `value` still contains a secret."""
        if isinstance(value, str):
            return any(secret in value for secret in self.secrets)
        if isinstance(value, bytes):
            return any(secret.encode() in value for secret in self.secrets)
        if isinstance(value, dict):
            return any(self.leaks_into(k) or self.leaks_into(v) for k, v in value.items())
        if isinstance(value, list | tuple):
            return any(self.leaks_into(item) for item in value)
        return False

    def _raw_bytes(self, raw: bytes) -> bytes:
        for form in self._forms.forms:
            raw = raw.replace(form.encode(), SECRET_PLACEHOLDER.encode())
        return raw

    def _json_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._json_value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(k): self._json_value(v) for k, v in value.items()}
        return value
