"""What a problem of a sample file says: pydantic's errors as sentences that name the
key, the allowed keys or values, and the layout's way of writing it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from pydantic_core import ErrorDetails

from turncheck.formats.samples import (
    ENTRY_MODELS,
    MAX_SCORE,
    MIN_SCORE,
    Expected,
    Layout,
    Message,
)
from turncheck.formats.toml_positions import TomlPath
from turncheck.text.suggest import did_you_mean

_LAYOUT_HINTS: dict[tuple[Layout, str], str] = {
    ("list", "score"): " (in the list layout write expected = { score = N, reason = \"...\" })",
    ("list", "reason"): " (in the list layout write expected = { score = N, reason = \"...\" })",
    ("keyed", "expected"): " (in the keyed layout write score = N and reason = \"...\" directly)",
    ("keyed", "id"): " (in the keyed layout the id is the table name: [samples.<id>])",
}
_VALUE_SHAPES = {
    "id": "a non-empty string",
    "tags": "an array of strings",
    "description": "a string",
    "reason": "a string",
    "messages": 'an array of tables with "role" and "content"',
}
_SCORE_RULE = f"an integer from {MIN_SCORE} to {MAX_SCORE}"


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else show(key)


def describe(layout: Layout, loc: TomlPath, problem: ErrorDetails) -> tuple[str, str]:
    kind, value = problem["type"], problem["input"]
    if kind == "extra_forbidden":
        return "unknown-key", _unknown_key(layout, loc)
    if loc[:1] == ("messages",):
        return _messages_problem(loc, kind, value)
    if loc[-1:] == ("score",) or loc == ("expected",):
        return _score_problem(layout, loc, kind, value)
    field = next((part for part in reversed(loc) if isinstance(part, str)), "sample")
    shape = _VALUE_SHAPES.get(field, "valid")
    return "invalid-sample", f'"{field}" must be {shape}, got {show(value)}'


def _unknown_key(layout: Layout, loc: TomlPath) -> str:
    key = str(loc[-1])
    if loc[:1] == ("messages",) and len(loc) == 3:
        allowed: tuple[str, ...] = tuple(Message.model_fields)
        return f"message {_ordinal(loc)} has an unknown key {show(key)}{suggestion(key, allowed)}"
    if loc[:1] == ("expected",) and len(loc) == 2:
        allowed = tuple(Expected.model_fields)
        return f'unknown key {show(key)} in "expected"{suggestion(key, allowed)}'
    hint = _LAYOUT_HINTS.get((layout, key)) or suggestion(key, ENTRY_MODELS[layout].model_fields)
    return f"unknown key {show(key)}{hint}"


def _messages_problem(loc: TomlPath, kind: str, value: object) -> tuple[str, str]:
    if len(loc) == 1:
        if kind == "missing":
            return "empty-messages", 'has no "messages"'
        if kind == "too_short":
            return "empty-messages", '"messages" is empty'
        shape = _VALUE_SHAPES["messages"]
        return "invalid-sample", f'"messages" must be {shape}, got {show(value)}'
    message = f"message {_ordinal(loc)}"
    if len(loc) == 2 and kind == "value_error":
        return "invalid-message", f'{message} has no "content"'
    if len(loc) == 2:
        shape = 'a table with "role" and "content"'
        return "invalid-message", f"{message} must be {shape}, got {show(value)}"
    field = loc[2]
    if kind == "missing":
        return "invalid-message", f'{message} has no "{field}"'
    if kind == "string_too_short":
        return "invalid-message", f'{message} has an empty "{field}"'
    return "invalid-message", f'{message}: "{field}" must be a string, got {show(value)}'


def _score_problem(layout: Layout, loc: TomlPath, kind: str, value: object) -> tuple[str, str]:
    if kind == "missing":
        if layout == "keyed":
            return "missing-score", f"has no score (add score = N, where N is {_SCORE_RULE})"
        add = 'expected = { score = N, reason = "..." }'
        return "missing-score", f"has no expected score (add {add}, where N is {_SCORE_RULE})"
    if loc == ("expected",):
        return "invalid-sample", (
            f'"expected" must be a table like {{ score = 3, reason = "..." }}, got {show(value)}'
        )
    out_of_range = kind in ("greater_than_equal", "less_than_equal")
    code = "score-out-of-range" if out_of_range else "invalid-score"
    return code, f"expected score must be {_SCORE_RULE}, got {show(value)}"


def _ordinal(loc: TomlPath) -> int:
    index = loc[1]
    return index + 1 if isinstance(index, int) else 0


def suggestion(key: str, allowed: Iterable[str]) -> str:
    names = list(allowed)
    return did_you_mean(key, names, f" (allowed: {', '.join(names)})", show)


def show(value: object) -> str:
    """A short, printable, TOML-like rendering of a value for a message."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(clip(value, 60), ensure_ascii=False)
    elif isinstance(value, int) and value.bit_length() > 128:
        text = "a huge integer"
    elif isinstance(value, list):
        text = "an array"
    elif isinstance(value, dict):
        text = "a table"
    else:
        text = clip(str(value))
    return printable(text)


def printable(text: str) -> str:
    """`text` with lone surrogates escaped, so that it can be encoded and printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
