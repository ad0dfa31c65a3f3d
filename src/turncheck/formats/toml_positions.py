"""Where each table header, key and inline-array element starts in TOML text.

tomllib returns no positions, so a small tokenizer walks the (already valid) text; sample
files and the project configuration point their problems at what it finds.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

TomlPath = tuple[str | int, ...]
Position = tuple[int, int]

TOML_ERROR_POSITION = re.compile(
    r"(?P<reason>.*?)\s*\(at line (?P<line>\d+), column (?P<column>\d+)\)")
"""A tomllib error message: its reason and where it points."""
_PUNCTUATION = "[]{}=,."
_BARE_STOP = set(_PUNCTUATION) | set(" \t\r\n#\"'")


@dataclass(frozen=True)
class _Token:
    kind: str  # a punctuation character, "str", "bare" or "nl"
    text: str
    line: int
    column: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, line_start, i = 1, 0, 0
    while i < len(text):
        char = text[i]
        column = i - line_start + 1
        if char == "\n":
            tokens.append(_Token("nl", char, line, column))
            end = i + 1
        elif char in " \t\r":
            end = i + 1
        elif char == "#":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        elif char in "\"'":
            end = _string_end(text, i)
            tokens.append(_Token("str", text[i:end], line, column))
        elif char in _PUNCTUATION:
            end = i + 1
            tokens.append(_Token(char, char, line, column))
        else:
            end = i + 1
            while end < len(text) and text[end] not in _BARE_STOP:
                end += 1
            tokens.append(_Token("bare", text[i:end], line, column))
        newlines = text.count("\n", i, end)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", i, end) + 1
        i = end
    return tokens


def _string_end(text: str, start: int) -> int:
    quote = text[start]
    delimiter = quote * 3 if text.startswith(quote * 3, start) else quote
    i = start + len(delimiter)
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
        elif text.startswith(delimiter, i):
            end = i + len(delimiter)
            # A multi-line string may end with one or two quotes of its own: """a"""".
            while len(delimiter) == 3 and end < len(text) and text[end] == quote and end - i < 5:
                end += 1
            return end
        else:
            i += 1
    return len(text)


def _key_text(token: _Token) -> str:
    if token.kind == "bare":
        return token.text
    try:
        return str(tomllib.loads(f"k = {token.text}")["k"])
    except tomllib.TOMLDecodeError:
        return token.text


class TomlLocator:
    """Positions of headers, keys and inline-array elements, by their path in the data."""

    def __init__(self, text: str) -> None:
        self.positions: dict[TomlPath, Position] = {}
        self.table_headers: set[TomlPath] = set()
        self._tokens = _tokens(text)
        self._next = 0
        self._array_lengths: dict[TomlPath, int] = {}
        self._walk()

    def locate(self, path: TomlPath) -> Position:
        """Where `path` is, or its closest located ancestor; (1, 1) if none is."""
        for length in range(len(path), 0, -1):
            prefix = path[:length]
            found = self.positions.get(prefix)
            if found is None and length <= 2:
                found = self._first_inside(prefix)
            if found:
                return found
        return (1, 1)

    def _first_inside(self, prefix: TomlPath) -> Position | None:
        inside = [pos for path, pos in self.positions.items() if path[: len(prefix)] == prefix]
        return min(inside, default=None)

    def _peek(self) -> _Token | None:
        return self._tokens[self._next] if self._next < len(self._tokens) else None

    def _take(self) -> _Token | None:
        token = self._peek()
        self._next += 1
        return token

    def _walk(self) -> None:
        table: TomlPath = ()
        while (token := self._skip_newlines()) is not None:
            if token.kind == "[":
                table = self._header()
            elif token.kind in ("bare", "str"):
                self._key_value(table)
            self._skip_past_newline()

    def _skip_past_newline(self) -> None:
        while (token := self._take()) is not None and token.kind != "nl":
            pass

    def _header(self) -> TomlPath:
        opening = self._take()
        assert opening is not None
        second = self._peek()
        is_array = second is not None and second.kind == "[" and second.column == opening.column + 1
        if is_array:
            self._next += 1
        keys = self._dotted_key()
        if not keys:
            return ()
        if is_array:
            array = (*self._resolve(keys[:-1]), keys[-1])
            index = self._array_lengths.get(array, 0)
            self._array_lengths[array] = index + 1
            path: TomlPath = (*array, index)
        else:
            path = self._resolve(keys)
            self.table_headers.add(path)
        self.positions.setdefault(path, (opening.line, opening.column))
        return path

    def _resolve(self, keys: list[str]) -> TomlPath:
        """Follow arrays of tables to their last element, as TOML does for headers."""
        path: TomlPath = ()
        for key in keys:
            path = (*path, key)
            if path in self._array_lengths:
                path = (*path, self._array_lengths[path] - 1)
        return path

    def _dotted_key(self) -> list[str]:
        keys: list[str] = []
        while (token := self._peek()) is not None and token.kind in ("bare", "str"):
            keys.append(_key_text(token))
            self._next += 1
            following = self._peek()
            if following is None or following.kind != ".":
                break
            self._next += 1
        return keys

    def _key_value(self, table: TomlPath) -> None:
        first = self._peek()
        keys = self._dotted_key()
        equals = self._peek()
        if first is None or not keys or equals is None or equals.kind != "=":
            return
        self._next += 1
        path = (*table, *keys)
        self.positions.setdefault(path, (first.line, first.column))
        self._value(path)

    def _value(self, path: TomlPath) -> None:
        token = self._peek()
        if token is not None and token.kind == "[":
            self._next += 1
            self._inline_array(path)
        elif token is not None and token.kind == "{":
            self._next += 1
            self._inline_table(path)
        else:
            while (token := self._peek()) is not None and token.kind not in (",", "]", "}", "nl"):
                self._next += 1

    def _inline_array(self, path: TomlPath) -> None:
        index = 0
        while (token := self._skip_newlines()) is not None and token.kind != "]":
            start = self._next
            self.positions.setdefault((*path, index), (token.line, token.column))
            self._value((*path, index))
            after = self._skip_newlines()
            if after is not None and after.kind == ",":
                self._next += 1
            self._next = max(self._next, start + 1)
            index += 1
        self._next += 1

    def _inline_table(self, path: TomlPath) -> None:
        while (token := self._skip_newlines()) is not None and token.kind != "}":
            start = self._next
            if token.kind in ("bare", "str"):
                self._key_value(path)
            self._next = max(self._next, start + 1)
        self._next += 1

    def _skip_newlines(self) -> _Token | None:
        while (token := self._peek()) is not None and token.kind == "nl":
            self._next += 1
        return token
