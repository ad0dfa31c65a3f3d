"""Late binding of secrets: the one place a secret's value enters a request.

Templates render a secret as the token `<SECRET:NAME>` (`formats.templates`).
`SecretBinder` replaces the tokens of the suite's declared secrets with their
values inside the request body (JSON-escaped) and header values, and nowhere
else; it sits directly in front of the network transport, below the cassette,
so a cassette stores and matches the token form and a replay needs no value (live
requests: `JsonHttpClient._send`; recording: `CassetteTransport._record`).
Tokens of names the suite did not declare are left as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from turncheck.formats.templates import SECRET_TOKEN
from turncheck.providers.base import ProviderError


class SecretBinder:
    """Binds `<SECRET:NAME>` tokens for the declared names; a None value means unset."""

    def __init__(self, declared: Mapping[str, str | None]) -> None:
        self._declared = dict(declared)

    def __bool__(self) -> bool:
        return bool(self._declared)

    def _value(self, name: str) -> str | None:
        if name not in self._declared:
            return None
        value = self._declared[name]
        if value is None:
            raise ProviderError(
                f"secret {name!r} is not set: set the environment variable {name} to call "
                "the provider (replaying a cassette needs no value)"
            )
        return value

    def text(self, text: str, *, json_escaped: bool = False) -> str:
        def replace(match: re.Match[str]) -> str:
            value = self._value(match[1])
            if value is None:
                return match[0]
            return json.dumps(value)[1:-1] if json_escaped else value

        return SECRET_TOKEN.sub(replace, text)

    def bind(self, headers: Mapping[str, str], body: bytes) -> tuple[dict[str, str], bytes]:
        """Header values and a JSON (or text) body with the declared tokens bound."""
        bound_headers = {name: self.text(value) for name, value in headers.items()}
        if b"<SECRET:" not in body:
            return bound_headers, body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return bound_headers, body
        is_json = "json" in {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        return bound_headers, self.text(text, json_escaped=is_json).encode("utf-8")
