"""The lists every layer spells the same way, each in one place: the providers (with
what each needs from the environment, how its calls are priced and where its
embeddings go), the run modes and the kinds of target.

Suite fields, the grader's fields, CLI choices, the credential list and the docs table
in docs/providers.md are derived from here (tests/repo/test_choices.py checks the docs
and the CLI). Adding a provider: one `ProviderName` literal, one `PROVIDERS` entry and
the builder it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

Mode = Literal["replay", "record", "live"]
"""replay: every call answered from the cassette; record: misses are sent and recorded;
live: no cassettes."""
MODES: tuple[Mode, ...] = get_args(Mode)

TargetKind = Literal["http", "python", "command"]
TARGET_KINDS: tuple[TargetKind, ...] = get_args(TargetKind)

ProviderName = Literal["openrouter", "openai", "anthropic", "azure", "gemini"]
"""Spelled out for the type checker; `PROVIDERS` has one entry per name (a test checks)."""
PROVIDER_NAMES: tuple[ProviderName, ...] = get_args(ProviderName)

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"


@dataclass(frozen=True)
class ProviderSpec:
    """What turncheck knows of one provider besides how to call it."""

    builder: str
    """`module:function` that builds it from a `providers.common.Connection`."""
    key_env: str
    """The variable holding its API key."""
    base_url_env: str | None
    """The variable its base URL is read from when none is given."""
    price_id: str | None
    """Its id in the price table; None: its calls are not priced."""
    priced_host: str | None = None
    """When set, calls are priced only when they go to this host (OpenAI's own API; an
    OpenAI-compatible local server is free)."""
    takes_any_base_url: bool = False
    """A `base_url` given with no provider points at this kind of server."""
    embeddings: ProviderName | None = None
    """Where its embedding calls go when it has no embeddings endpoint (None: itself)."""
    embedding_prefix: str = ""
    """Put before the default embedding model's id (OpenRouter names models by vendor)."""
    docs: str = ""
    """What the docs table says of it."""


PROVIDERS: dict[ProviderName, ProviderSpec] = {
    "openrouter": ProviderSpec(
        "turncheck.providers.openai_compat:openrouter", "OPENROUTER_API_KEY", None,
        "openrouter", embedding_prefix="openai/",
        docs="`vendor/model` ids with no provider go here"),
    "openai": ProviderSpec(
        "turncheck.providers.openai_compat:openai_compatible", "OPENAI_API_KEY",
        "OPENAI_BASE_URL", "openai", priced_host="api.openai.com", takes_any_base_url=True,
        docs="bare ids; any OpenAI-compatible server (no key needed off api.openai.com)"),
    "anthropic": ProviderSpec(
        "turncheck.providers.anthropic:AnthropicProvider", "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL", "anthropic", embeddings="openai",
        docs="the Messages API, only when asked for; embeddings go to OpenAI"),
    "azure": ProviderSpec(
        "turncheck.providers.openai_compat:azure_openai", "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_BASE_URL", "azure", takes_any_base_url=True,
        docs="needs the deployment URL; the key goes in the `api-key` header"),
    "gemini": ProviderSpec(
        "turncheck.providers.openai_compat:gemini", "GEMINI_API_KEY", None, "google",
        takes_any_base_url=True, docs="Google's OpenAI-compatible endpoint"),
}

_BY_NAME: dict[str, ProviderSpec] = {name: spec for name, spec in PROVIDERS.items()}


def provider_spec(name: str) -> ProviderSpec | None:
    """The table's entry for `name`, or None for a name it does not know."""
    return _BY_NAME.get(name)


def provider_for(provider: str | None, base_url: str | None) -> str | None:
    """The provider a run asks for: a base URL given with no provider means an
    OpenAI-compatible server (`--base-url` alone implies `--provider openai`)."""
    return "openai" if base_url and not provider else provider


def price_id(name: str, url: str | None) -> str | None:
    """The price-table id of calls to the provider `name` at `url` (None: the provider's
    own URL)."""
    spec = provider_spec(name)
    if spec is None:
        return None
    if spec.priced_host is not None and url is not None \
            and _host(url) != spec.priced_host:
        return None
    return spec.price_id


def embedding_provider(name: str) -> tuple[str, str]:
    """(provider, default embedding model) for a suite whose chat provider is `name`."""
    spec = provider_spec(name)
    target = name if spec is None or spec.embeddings is None else spec.embeddings
    target_spec = provider_spec(target)
    prefix = "" if target_spec is None else target_spec.embedding_prefix
    return target, prefix + DEFAULT_EMBEDDING_MODEL


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def provider_table_markdown() -> str:
    """The table docs/providers.md shows (kept equal by a test)."""
    rows = ["| provider | API key | base URL variable | priced as | notes |",
            "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{name}` | `{spec.key_env}` | "
             f"{f'`{spec.base_url_env}`' if spec.base_url_env else '—'} | "
             f"{f'`{spec.price_id}`' if spec.price_id else '—'} | {spec.docs} |"
             for name, spec in PROVIDERS.items()]
    return "\n".join(rows)
