"""Glob patterns for `match` / `not_match` (SPEC §3).

The glob must match the whole response (surrounding whitespace stripped),
case-insensitively; `*` spans newlines, `?` is one character, `[...]` a class
(`[!...]` negates). A pattern without wildcards is whole-response equality.
"""

from __future__ import annotations

import re
from functools import lru_cache


def _class_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1."""
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    return pattern.find("]", index)


def _class_regex(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = body.replace("\\", "\\\\").replace("^", "\\^")
    return f"[{'^' if negate else ''}{escaped}]"


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append(".")
        elif char == "[" and (end := _class_end(pattern, index)) != -1:
            parts.append(_class_regex(pattern[index + 1 : end]))
            index = end
        else:
            parts.append(re.escape(char))
        index += 1
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def glob_match(pattern: str, response: str) -> bool:
    return compile_glob(pattern.strip()).fullmatch(response.strip()) is not None
