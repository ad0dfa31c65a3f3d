"""JSON from outside (answers, error bodies, cassette request bodies) with a nesting limit.

`json.loads` recurses once per nesting level and raises `RecursionError`, not
`ValueError`, on input like `[[[[…]]]]`: a few kilobytes from a hostile model server or a
cassette in a pull request would end the run with a traceback. Whatever parses, but
nests deeper than `MAX_JSON_DEPTH`, is refused as well, so that the code walking the
value afterwards (scrubbing, canonical JSON for cassette keys, redaction) can recurse
safely. `JsonTooDeep` is a `ValueError`, so callers that treat "not JSON" as a
diagnostic keep doing so.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 256
"""Chat requests and answers nest about 6 deep; JSON schemas and tool arguments a few
dozen at most."""


class JsonTooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def loads_bounded(data: str | bytes) -> Any:
    """`json.loads(data)`, raising `JsonTooDeep` beyond `MAX_JSON_DEPTH` levels."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonTooDeep from None
    if _openers(data) > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise JsonTooDeep
    return value


def _openers(data: str | bytes) -> int:
    """An upper bound of the nesting depth, counted at C speed (most bodies stop here)."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _depth(value: Any) -> int:
    """The nesting depth of a parsed value, without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest
