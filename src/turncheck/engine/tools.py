"""Scripted tools: answering a model's function calls from the suite (issue 24).

Nothing is ever executed. Each call is answered by the first `tool_results` entry of its
tool whose `when` is a subset of the call's arguments (strings in `when` are globs);
an entry without `when` is the default. A call no entry answers, or whose arguments
are not a JSON object, ends its eval with an error naming the tool and its arguments.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from turncheck.engine.globs import glob_match
from turncheck.formats.nesting import json_structure_problem
from turncheck.formats.suite import Eval, Metadata
from turncheck.formats.tools import (
    DEFAULT_MAX_TOOL_ROUNDS,
    ScriptedResult,
    ToolResults,
    choice_json,
    tool_json,
)
from turncheck.providers.base import ToolCall
from turncheck.report.model import MAX_VALUE_DEPTH, too_deep_text

MAX_SHOWN_ARGUMENTS = 200
"""Characters of a call's arguments an error message quotes."""
MAX_CALLS_PER_ANSWER = 64
"""Parallel calls one answer may make: model output is untrusted, and each call is
answered, resent and reported."""


class ToolScriptError(Exception):
    """A call the suite cannot answer; the message is for the user."""


class ArgumentsTooDeep(ToolScriptError):
    """Arguments nested deeper than a report may keep (`MAX_VALUE_DEPTH`)."""


@dataclass(frozen=True)
class ToolSetup:
    """The tools one eval offers and how their calls are answered."""

    tools: tuple[dict[str, Any], ...] = ()
    choice: str | dict[str, Any] | None = None
    results: ToolResults = field(default_factory=dict)
    max_rounds: int = DEFAULT_MAX_TOOL_ROUNDS

    @classmethod
    def of(cls, metadata: Metadata, evaluation: Eval | None = None) -> ToolSetup:
        """The eval's own `tools`, `tool_choice` and `tool_results`, each overriding the
        metadata's."""
        own = evaluation if evaluation is not None else None
        tools = (own.tools if own and own.tools is not None else metadata.tools) or []
        choice = own.tool_choice if own and own.tool_choice is not None \
            else metadata.tool_choice
        results = own.tool_results if own and own.tool_results is not None \
            else metadata.tool_results
        return cls(tuple(tool_json(tools)), choice_json(choice), results or {},
                   metadata.max_tool_rounds or DEFAULT_MAX_TOOL_ROUNDS)

    def answer(self, call: ToolCall, arguments: dict[str, Any]) -> str:
        """The tool message for `call`, or ToolScriptError when nothing answers it."""
        for entry in self.results.get(call.name, ()):
            if entry.when is None or args_match(entry.when, arguments):
                return result_text(entry)
        shown = shorten(call.arguments)
        raise ToolScriptError(f"no scripted result for {call.name}({shown}): add a matching "
                              f"entry (or one without `when`) under tool_results.{call.name}")


def parse_arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments: a JSON object of at most `MAX_VALUE_DEPTH` levels, else
    ToolScriptError."""
    text = call.arguments or "{}"
    if json_structure_problem(text, max_nesting=MAX_VALUE_DEPTH, max_items=sys.maxsize):
        raise ArgumentsTooDeep(f"the model called {call.name} with arguments nested more "
                               f"than {MAX_VALUE_DEPTH} levels deep: {shorten(text)}")
    try:
        value = json.loads(text)
    except ValueError:
        raise ToolScriptError(f"the model called {call.name} with malformed arguments "
                              f"(not JSON): {shorten(call.arguments)}") from None
    if not isinstance(value, dict):
        raise ToolScriptError(f"the model called {call.name} with arguments that are not a "
                              f"JSON object: {shorten(call.arguments)}")
    return value


def kept_arguments(call: ToolCall, problem: ToolScriptError) -> str:
    """What the report keeps of arguments that could not be parsed: their text, marked
    when it nests too deeply for a report to hold it as JSON."""
    return too_deep_text(call.arguments) if isinstance(problem, ArgumentsTooDeep) \
        else call.arguments


def result_text(entry: ScriptedResult) -> str:
    if isinstance(entry.result, str):
        return entry.result
    return json.dumps(entry.result, ensure_ascii=False)


def args_match(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Every expected argument is present and matches: strings as globs, mappings as
    subsets (recursively), anything else by equality (a boolean never equals a number)."""
    return all(key in actual and value_matches(value, actual[key])
               for key, value in expected.items())


def value_matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(actual, str) and glob_match(expected, actual)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and args_match(expected, actual)
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            value_matches(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


def arguments_text(arguments: object) -> str:
    """`city="Paris", days=2` for an object; the raw text when it was not JSON."""
    if isinstance(arguments, dict):
        return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}"
                         for key, value in arguments.items())
    return str(arguments)


def shorten(text: str) -> str:
    return text if len(text) <= MAX_SHOWN_ARGUMENTS else text[:MAX_SHOWN_ARGUMENTS] + "…"
