"""What a report keeps of each model call an app target made through the recording proxy
(docs/targets.md, "What the app sent"): the API, the model, the system prompt (written
once per report, by hash, with the suite prompts), the tools offered, the tool calls the
model asked for, the tool results the app sent back, tokens, cost and latency."""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from turncheck.report.model import PROMPT_TABLE, ReportModel


def _none(value: object) -> bool:
    return value is None


def _empty(value: object) -> bool:
    return not value


class OfferedTool(ReportModel):
    """A tool definition the app offered the model: its name and the SHA-256 of the
    whole definition (canonical JSON), which changes with its schema or description."""

    name: str
    schema_sha256: str


class AppToolCall(ReportModel):
    """A tool call the model asked the app for."""

    name: str
    arguments: Any
    """A JSON object, or the raw text when it was not valid JSON (cut when long)."""
    id: str | None = Field(default=None, exclude_if=_none)


class AppToolResult(ReportModel):
    """A tool result the app sent back to the model (on the call after the one that asked)."""

    content: str
    name: str | None = Field(default=None, exclude_if=_none)
    """The tool's name, when the request names the call it answers."""
    id: str | None = Field(default=None, exclude_if=_none)


class AppCall(ReportModel):
    """One model call an app made during a turn, as the proxy saw it."""

    provider: str
    """`openai` or `anthropic`: where the call went, and the price table's provider id."""
    api: str
    """`chat` (Chat Completions), `responses`, `messages` (Anthropic) or `embeddings`;
    `other` for any other path."""
    model: str | None = None
    streamed: bool = Field(default=False, exclude_if=_empty)
    system_sha256: str | None = Field(default=None, exclude_if=_none)
    """SHA-256 of the whole system prompt the call sent; the report's `prompts` holds it."""
    system: str | None = Field(default=None, exclude_if=_none)
    """The system prompt (instructions) the call sent; written under the report's
    `prompts`, keyed by `system_sha256`, and put back here when the report is read."""
    system_chars: int | None = Field(default=None, exclude_if=_none)
    """Set only when `system` is an excerpt: the system prompt's full length."""
    tools: list[OfferedTool] = Field(default_factory=list, exclude_if=_empty)
    tool_calls: list[AppToolCall] = Field(default_factory=list, exclude_if=_empty)
    tool_results: list[AppToolResult] = Field(default_factory=list, exclude_if=_empty)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = Field(default=None, exclude_if=_none)
    tokens_estimated: bool = Field(default=False, exclude_if=_empty)
    """The answer reported no usage: the tokens are turncheck's estimate from the text."""
    cost_usd: float | None = None
    first_token_ms: float | None = Field(default=None, exclude_if=_none)
    """Live and record runs: milliseconds until the answer's first bytes (a replayed
    call has none: recorded latencies are not today's)."""
    total_ms: float | None = Field(default=None, exclude_if=_none)
    status: int = Field(default=200, exclude_if=lambda status: status == 200)
    turn_guessed: bool = Field(default=False, exclude_if=_empty)
    """Several of the app's turns were in flight and the call carried none of their user
    messages: counted in the turn opened last, which may not be the one that made it
    (docs/targets.md, "Concurrent turns")."""

    @model_serializer(mode="wrap")
    def _system_once(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        table = PROMPT_TABLE.get()
        if table is None or self.system is None or self.system_sha256 is None \
                or not isinstance(data, dict):
            return data
        table.setdefault(self.system_sha256, self.system)
        data.pop("system", None)
        return data
