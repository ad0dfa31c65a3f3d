"""Pieces shared by the concrete providers: connection options, API-key handling and
response parsing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turncheck.providers.base import MISSING_KEY_EXTENSION, ProviderError
from turncheck.providers.cassettes import Cassette
from turncheck.providers.http import JsonHttpClient, RetryPolicy, Sleep
from turncheck.providers.secrets import SecretBinder

if TYPE_CHECKING:
    from turncheck.providers.http import Transport


class ApiKey:
    """An optional API key whose absence is reported at call time, not construction.

    Behind a cassette transport a missing key is only an error when the request
    has to reach the network (a record-mode miss); replay never needs a key.
    """

    def __init__(
        self,
        value: str | None,
        *,
        env_name: str,
        provider_name: str,
        required: bool,
        transport: Transport | None,
    ) -> None:
        self.value = value or None
        self._missing: str | None = None
        if required and self.value is None:
            self._missing = (
                f"{env_name} is not set; {provider_name} needs it in live and record modes "
                "(replay mode needs no key)"
            )
        self._defer = isinstance(transport, Cassette)

    @property
    def secrets(self) -> list[str]:
        return [self.value] if self.value else []

    def request_extensions(self) -> dict[str, Any]:
        if self._missing is None:
            return {}
        if self._defer:
            return {MISSING_KEY_EXTENSION: self._missing}
        raise ProviderError(self._missing)


@dataclass(frozen=True)
class Connection:
    """How a provider reaches its API; `make_provider` hands the same one to every provider.

    `base_url` None means the provider's default; `transport` is the cassette transport,
    or None for live calls; `secrets` are kept out of error messages.
    """

    env: Mapping[str, str]
    base_url: str | None = None
    policy: RetryPolicy | None = None
    transport: Transport | None = None
    sleep: Sleep | None = None
    secrets: tuple[str, ...] = ()
    binder: SecretBinder | None = None
    """Binds secret tokens in live requests (a cassette transport binds its own)."""

    def api_key(self, env_name: str, provider_name: str, *, required: bool) -> ApiKey:
        return ApiKey(
            self.env.get(env_name),
            env_name=env_name,
            provider_name=provider_name,
            required=required,
            transport=self.transport,
        )

    def http_client(self, provider_name: str, key: ApiKey) -> JsonHttpClient:
        return JsonHttpClient(
            provider_name,
            self.policy or RetryPolicy(),
            self.transport,
            redact=[*key.secrets, *self.secrets],
            sleep=self.sleep,
            binder=self.binder,
        )


def well_formed(text: str) -> str:
    """`text` with lone surrogates (legal in JSON escapes, not in UTF-8) replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def token_count(value: object) -> int | None:
    """A usage number from a response, or None when absent or not a count."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def dig(payload: object, *path: str | int) -> object:
    """`payload[p0][p1]...`, or None when any step is missing or of the wrong type."""
    current = payload
    for step in path:
        if isinstance(step, int):
            if not isinstance(current, list) or not -len(current) <= step < len(current):
                return None
            current = current[step]
        else:
            if not isinstance(current, dict):
                return None
            current = current.get(step)
    return current
