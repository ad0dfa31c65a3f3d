"""LLM providers (OpenRouter, OpenAI-compatible, Anthropic), retries and cassettes."""

import importlib
from typing import TYPE_CHECKING, Any

from turncheck.lazy import skip_optional_submodule

# httpx's command-line client (click, pygments, rich) is of no use to turncheck.
skip_optional_submodule("httpx._main")

# Re-exports load on first use (PEP 562), so `turncheck.providers.base` can be imported
# without httpx and vcrpy (the cassette and HTTP modules) by commands that never call out,
# and a replay without httpx (`CassetteTransport`, the recording one, needs it).
_HOMES = {
    "SECRET_PLACEHOLDER": "base",
    "AnswerSchema": "base",
    "ChatMessage": "base",
    "ChatRequest": "base",
    "ChatResponse": "base",
    "EmbeddingResponse": "base",
    "Provider": "base",
    "ProviderError": "base",
    "RecordingMissing": "base",
    "Cassette": "cassettes",
    "CassetteFormatError": "cassettes",
    "CassetteMode": "cassettes",
    "CassetteTransport": "cassette_transport",
    "cassette_path_for": "cassettes",
    "make_provider": "factory",
    "open_cassette": "factory",
    "select_provider": "factory",
    "RetryPolicy": "http",
}

if TYPE_CHECKING:
    from turncheck.providers.base import (
        SECRET_PLACEHOLDER,
        AnswerSchema,
        ChatMessage,
        ChatRequest,
        ChatResponse,
        EmbeddingResponse,
        Provider,
        ProviderError,
        RecordingMissing,
    )
    from turncheck.providers.cassette_transport import CassetteTransport
    from turncheck.providers.cassettes import (
        Cassette,
        CassetteFormatError,
        CassetteMode,
        cassette_path_for,
    )
    from turncheck.providers.factory import make_provider, open_cassette, select_provider
    from turncheck.providers.http import RetryPolicy


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{home}")
    return getattr(module, name)


__all__ = [
    "SECRET_PLACEHOLDER",
    "AnswerSchema",
    "Cassette",
    "CassetteFormatError",
    "CassetteMode",
    "CassetteTransport",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "EmbeddingResponse",
    "Provider",
    "ProviderError",
    "RecordingMissing",
    "RetryPolicy",
    "cassette_path_for",
    "make_provider",
    "open_cassette",
    "select_provider",
]
