"""Tools a suite declares and the results scripted for their calls (docs/suites.md).

`tools` is the list an application already passes to OpenAI's chat completions API
(`{type: function, function: {name, description, parameters}}`); `tool_results`
answers each call from a script instead of running anything: per tool name, a list of
`{when: {ARG: VALUE}, result: ANY}` entries, the first whose `when` is a subset of the
call's arguments answering (an entry without `when` is the default).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
"""What OpenAI and Anthropic both accept as a tool (function) name."""
DEFAULT_MAX_TOOL_ROUNDS = 8
"""Answers with tool calls one turn may take before its final answer."""
MAX_TOOL_ROUNDS = 64
MAX_TOOLS = 128
"""OpenAI's own limit on the tools of one request."""

ToolName = Annotated[StrictStr, Field(pattern=TOOL_NAME_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class ToolFunction(_Strict):
    name: ToolName = Field(description="The function's name, as the model calls it.")
    description: StrictStr | None = None
    parameters: dict[str, Any] | None = Field(
        default=None, description="JSON Schema of the arguments (an object schema)."
    )
    strict: StrictBool | None = None


class Tool(_Strict):
    """One function tool, in OpenAI's chat completions format."""

    type: Literal["function"]
    function: ToolFunction

    @property
    def name(self) -> str:
        return self.function.name


class NamedFunction(_Strict):
    name: ToolName


class ForcedTool(_Strict):
    """`tool_choice: {type: function, function: {name: NAME}}`: this tool must be called."""

    type: Literal["function"]
    function: NamedFunction


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | ForcedTool


class ScriptedResult(_Strict):
    """One scripted answer to a tool call."""

    when: dict[str, Any] | None = Field(
        default=None,
        description="Arguments the call must have (a subset; strings may be globs). "
        "Without `when` the entry answers any call (the default).",
    )
    result: Any = Field(description="Sent back as the tool message: JSON text unless a string.")


ToolResults: TypeAlias = dict[ToolName, Annotated[list[ScriptedResult], Field(min_length=1)]]

ToolList: TypeAlias = Annotated[list[Tool], Field(min_length=1, max_length=MAX_TOOLS)]
MaxToolRounds: TypeAlias = Annotated[StrictInt, Field(ge=1, le=MAX_TOOL_ROUNDS)]


def tool_json(tools: list[Tool]) -> list[dict[str, Any]]:
    """The tools as sent to the API (unset optional fields left out)."""
    return [tool.model_dump(exclude_none=True) for tool in tools]


def choice_json(choice: ToolChoice | None) -> str | dict[str, Any] | None:
    if choice is None or isinstance(choice, str):
        return choice
    return choice.model_dump()
