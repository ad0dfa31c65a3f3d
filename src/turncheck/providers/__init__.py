"""LLM providers (OpenRouter, OpenAI-compatible, Anthropic), retries and cassettes."""

from turncheck.providers.base import (
    SECRET_PLACEHOLDER,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    Provider,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.cassettes import (
    CassetteFormatError,
    CassetteMode,
    CassetteTransport,
    cassette_path_for,
)
from turncheck.providers.factory import Mode, make_provider, open_cassette, select_provider
from turncheck.providers.http import RetryPolicy

__all__ = [
    "SECRET_PLACEHOLDER",
    "CassetteFormatError",
    "CassetteMode",
    "CassetteTransport",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "EmbeddingResponse",
    "Mode",
    "Provider",
    "ProviderError",
    "RecordingMissing",
    "RetryPolicy",
    "cassette_path_for",
    "make_provider",
    "open_cassette",
    "select_provider",
]
