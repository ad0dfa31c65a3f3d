"""Sample files (TOML): conversations paired with the score a grader should give them.

The models of a loaded file; `formats.sample_loader` reads and validates one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    model_validator,
)

from turncheck.diagnostics import Diagnostic
from turncheck.formats.grader import Grader
from turncheck.formats.references import Reference

MIN_SCORE = -3
MAX_SCORE = 3

Layout = Literal["list", "keyed"]

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Score = Annotated[StrictInt, Field(ge=MIN_SCORE, le=MAX_SCORE)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleFunction(_Strict):
    name: NonEmptyStr
    arguments: StrictStr = "{}"


class SampleToolCall(_Strict):
    """A function call of an assistant message, in OpenAI's format."""

    id: StrictStr = ""
    type: Literal["function"] = "function"
    function: SampleFunction

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arguments(self) -> str:
        return self.function.arguments


def _is_none(value: object) -> bool:
    return value is None


class Message(_Strict):
    """An OpenAI chat message: any role; an assistant's may hold `tool_calls` (its
    `content` may then be left out) and a `tool` message its `tool_call_id`."""

    # Unset tool fields are left out of a dump: a plain message is `{role, content}`.
    role: NonEmptyStr
    content: NonEmptyStr | None = Field(default=None, exclude_if=_is_none)
    tool_calls: list[SampleToolCall] | None = Field(default=None, exclude_if=_is_none)
    tool_call_id: StrictStr | None = Field(default=None, exclude_if=_is_none)

    @model_validator(mode="after")
    def _says_something(self) -> Message:
        if self.content is None and not self.tool_calls:
            raise ValueError(MISSING_CONTENT)
        return self


MISSING_CONTENT = 'a message needs "content" (or, from an assistant, "tool_calls")'


class Expected(_Strict):
    score: Score
    reason: StrictStr | None = None


class Sample(_Strict):
    id: NonEmptyStr
    messages: list[Message] = Field(min_length=1)
    expected: Expected
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None
    line: int = Field(ge=1, description="1-based line of the sample's header in its file")


class SampleFile(BaseModel):
    path: str
    layout: Layout = "list"
    samples: list[Sample] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    grader: Grader | None = None
    """The validated `[grader]`; None when the file has none or it is invalid."""
    grader_declared: bool = False
    """The file has a `[grader]` table (valid or not)."""
    references: list[Reference] = Field(default_factory=list, exclude=True)
    """Files the grader's text comes from (`criteria = {file = "…"}`), root-relative."""
    skipped: int = 0
    """Invalid samples, reported in `diagnostics` and left out of `samples`."""
    location: Path | None = Field(default=None, exclude=True)
    """Where the file really is, when that differs from `path` (a base-commit copy)."""

    @property
    def source(self) -> Path:
        return self.location or Path(self.path)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


class ListEntry(_Strict):
    id: NonEmptyStr | None = None
    messages: list[Message] = Field(min_length=1)
    expected: Expected
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None

    def to_sample(self, default_id: str, line: int) -> Sample:
        return Sample(
            id=self.id or default_id, messages=self.messages, expected=self.expected,
            tags=self.tags, description=self.description, line=line,
        )


class KeyedEntry(_Strict):
    score: Score
    reason: StrictStr | None = None
    messages: list[Message] = Field(min_length=1)
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None

    def to_sample(self, sample_id: str, line: int) -> Sample:
        expected = Expected(score=self.score, reason=self.reason)
        return Sample(
            id=sample_id, messages=self.messages, expected=expected,
            tags=self.tags, description=self.description, line=line,
        )


ENTRY_MODELS: dict[Layout, type[ListEntry] | type[KeyedEntry]] = {
    "list": ListEntry,
    "keyed": KeyedEntry,
}
"""How a sample is written in each layout, before it becomes a `Sample`."""
