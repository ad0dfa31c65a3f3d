"""Provider-neutral request/response types, the `Provider` protocol and errors."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]

# A cassette stores the latency measured at record time in this response header,
# so replayed turns report the recorded latency instead of ~0 ms.
RECORDED_LATENCY_HEADER = "x-turncheck-latency-ms"

SECRET_PLACEHOLDER = "<SECRET>"
# Shorter values are not treated as secrets: replacing every "abc" would shred
# cassettes and messages, and such a value is not secret anyway.
MIN_SECRET_LENGTH = 4

# Request extension set by a provider that has no API key: the cassette
# transport raises this message only when it would have to call the network.
MISSING_KEY_EXTENSION = "turncheck.missing_key"

# Request extension a provider sets to a `(payload) -> problem | None` function telling
# whether a 2xx JSON answer is a usable completion; the cassette records only usable
# answers and re-records (or, replaying, refuses) stored ones that are not.
USABILITY_EXTENSION = "turncheck.usable"

# Response extension the cassette transport sets on answers it replays, so the
# engine can count the tokens a run really spent.
REPLAYED_EXTENSION = "turncheck.replayed"

# Set by the engine's budget guard (engine/budget.py) around one provider call: the
# cassette transport calls it just before a request goes to the network (a miss in
# record mode), so only calls that really cost money reserve budget. It raises to
# stop the request. Context variables follow the awaiting task, so concurrent
# calls each see their own gate.
NETWORK_GATE: ContextVar[Callable[[], None] | None] = ContextVar(
    "turncheck_network_gate", default=None
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call in a model's answer; `arguments` is the JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant message's function calls (its `content` may then be empty)."""
    tool_call_id: str | None = None
    """A `tool` message: the id of the call whose result `content` is."""


@dataclass(frozen=True, slots=True)
class AnswerSchema:
    """The JSON schema an answer must follow (judges and graders).

    Providers that can constrain their output to it do (OpenAI-compatible
    `response_format`, llama.cpp's grammar from a schema, Anthropic's forced tool
    call); one that rejects the request gets it again without the schema.
    """

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    messages: list[ChatMessage] = field(default_factory=list)
    temperature: float | None = None
    max_output_tokens: int | None = None
    seed: int | None = None
    json_object: bool = False
    """Ask for a JSON object answer (OpenAI-compatible `response_format`), e.g. for judges."""
    answer_schema: AnswerSchema | None = None
    """Ask for an answer constrained to this JSON schema where the provider supports it."""
    tools: tuple[dict[str, Any], ...] = ()
    """Function tools in OpenAI's chat format (`{type: function, function: {...}}`)."""
    tool_choice: str | dict[str, Any] | None = None
    """OpenAI's `tool_choice`: auto, none, required or a forced function."""
    reasoning_effort: str | None = None


@dataclass(frozen=True, slots=True)
class ChatResponse:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float
    model: str | None = None
    replayed: bool = field(default=False, compare=False)
    """Answered from a cassette rather than by the provider (not part of equality)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Function calls the model asked for; the turn goes on with their results."""
    reasoning_tokens: int | None = None
    """Of `output_tokens`, those spent reasoning (as the provider reports them)."""
    cached_input_tokens: int | None = None
    """Of `input_tokens`, those read from the provider's prompt cache."""


@dataclass(frozen=True, slots=True)
class EmbeddingResponse:
    vectors: list[list[float]]
    input_tokens: int | None
    replayed: bool = field(default=False, compare=False)


class ProviderError(Exception):
    """A provider call failed; `message` is safe to show to users (no API keys)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class RecordingMissing(ProviderError):
    """Replay mode found no recording for a request."""


@runtime_checkable
class Provider(Protocol):
    name: str
    price_provider_id: str | None

    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse: ...

    async def aclose(self) -> None: ...
