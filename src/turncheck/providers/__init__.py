"""LLM providers (OpenRouter, OpenAI-compatible, Anthropic), retries and cassettes."""

from turncheck.lazy import skip_optional_submodule

# httpx's command-line client (click, pygments, rich) is of no use to turncheck.
skip_optional_submodule("httpx._main")
