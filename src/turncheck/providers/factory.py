"""Choosing and building providers.

`select_provider` rules, first match wins:

1. An explicit `provider` (suite metadata or CLI) is used as is.
2. A `<provider>:` prefix naming a known provider (`anthropic:claude-3-5-haiku-latest`,
   `openai:gpt-4o-mini`, `openrouter:...`) selects it and is stripped. Other
   colons are left alone (`llama3:8b`, `vendor/model:free`).
3. A `base_url` means an OpenAI-compatible server, whatever the id looks like
   (vLLM serves `Qwen/Qwen2.5-7B-Instruct`).
4. `vendor/model` ids go to OpenRouter.
5. Bare ids (`gpt-4o-mini`) go to OpenAI (or `OPENAI_BASE_URL`).

Anthropic's own API is used only when asked for (1 or 2); `anthropic/claude-...`
is an OpenRouter id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from turncheck.choices import PROVIDER_NAMES, PROVIDERS, Mode, ProviderSpec, provider_spec
from turncheck.providers.base import Provider, ProviderError
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.cassettes import Cassette
from turncheck.providers.common import Connection
from turncheck.providers.http import RetryPolicy, Sleep
from turncheck.providers.secrets import SecretBinder
from turncheck.text.credentials import BASE_URL_ENV, PROVIDER_KEY_ENV, url_credentials

if TYPE_CHECKING:
    from turncheck.providers.http import Transport

API_KEY_ENV_VARS = tuple(PROVIDER_KEY_ENV[name] for name in PROVIDER_NAMES)
URL_PROVIDERS = tuple(name for name, spec in PROVIDERS.items() if spec.takes_any_base_url)
"""Providers a `base_url` given with no provider points at (an OpenAI-compatible server)."""


def select_provider(model: str, provider: str | None, base_url: str | None) -> tuple[str, str]:
    """(provider name, model id to send to its API)."""
    prefix, _, rest = model.partition(":")
    has_prefix = bool(rest) and prefix in PROVIDER_NAMES
    if provider is not None:
        if provider not in PROVIDER_NAMES:
            raise ProviderError(
                f"unknown provider {provider!r}; expected one of {', '.join(PROVIDER_NAMES)}"
            )
        return provider, rest if has_prefix and prefix == provider else model
    if has_prefix:
        return prefix, rest
    if base_url is not None:
        return "openai", model
    return ("openrouter" if "/" in model else "openai"), model


def env_credentials(env: Mapping[str, str]) -> list[str]:
    """The credentials `env` holds for the providers: their API keys, and whatever the
    base URL variables carry in their query or user information."""
    keys = [env[name] for name in API_KEY_ENV_VARS if env.get(name)]
    return keys + [value for name in BASE_URL_ENV for value in url_credentials(env.get(name))]


def base_url_for(name: str, provider: str | None, base_url: str | None) -> str | None:
    """The base URL the provider `name` gets: `base_url` belongs to the provider it was
    given with (`provider`, suite metadata or `--provider`), else to the OpenAI-compatible
    ones. A judge or embedding model sent to another provider keeps that provider's own URL,
    so an Anthropic URL never receives OpenAI embedding calls."""
    if base_url is None:
        return None
    if provider is not None and provider not in URL_PROVIDERS:
        return base_url if name == provider else None
    return base_url if name in URL_PROVIDERS else None


def make_provider(
    provider_name: str,
    *,
    env: Mapping[str, str],
    policy: RetryPolicy | None = None,
    transport: Transport | None = None,
    base_url: str | None = None,
    sleep: Sleep | None = None,
    secrets: Iterable[str] = (),
    binder: SecretBinder | None = None,
) -> Provider:
    """Build a provider; `transport` is the cassette transport, or None for live calls.

    A missing API key is reported when a request needs the network, not here.
    `secrets` (the suite's secret values) are kept out of error messages.
    """
    spec = provider_spec(provider_name)
    if spec is None:
        raise ProviderError(
            f"unknown provider {provider_name!r}; expected one of {', '.join(PROVIDER_NAMES)}"
        )
    builder = builder_of(spec)
    connection = Connection(
        env=env, base_url=base_url, policy=policy, transport=transport, sleep=sleep,
        secrets=(*secrets, *url_credentials(base_url), *env_credentials(env)), binder=binder,
    )
    return builder(connection)


def builder_of(spec: ProviderSpec) -> Callable[[Connection], Provider]:
    """The function (or class) the provider table names as the provider's builder."""
    module, _, attribute = spec.builder.partition(":")
    return cast("Callable[[Connection], Provider]",
                getattr(importlib.import_module(module), attribute))


def open_cassette(
    suite_path: Path, mode: Mode, *, env: Mapping[str, str], secrets: Iterable[str] = (),
    record_command: str | None = None,
    binder: SecretBinder | None = None,
    prune: bool = False,
    shown_as: Path | str | None = None,
) -> Cassette | None:
    """The suite's cassette, or None in live mode: in record mode its httpx transport
    (`CassetteTransport`, loaded with httpx only then), in replay mode the `Cassette`
    itself, which needs no httpx.

    `secrets` are the values of the suite's `{{secret(...)}}` templates; the API
    keys found in `env` are scrubbed as well. `record_command` is the command a
    replay miss suggests (default: `turncheck record <suite_path>`). `prune` (record
    mode): the save drops the interactions the run did not use (`Cassette.save`).
    `shown_as`: the suite's path as users see it (relative to the run's root); its
    cassette is named after it in every message.
    """
    if mode == "live":
        return None
    keys = env_credentials(env)
    cassette_class: type[Cassette] = Cassette
    if mode == "record":
        from turncheck.providers.cassette_transport import CassetteTransport

        cassette_class = CassetteTransport
    return cassette_class(
        cassette_path_for(suite_path), mode, secrets=[*secrets, *keys], suite_path=suite_path,
        record_command=record_command,
        binder=binder,
        prune=prune and mode == "record",
        shown_as=None if shown_as is None else cassette_path_for(Path(shown_as)).as_posix(),
    )
