"""Structure limits for JSON and TOML, checked on the text before a parser builds anything.

Python's `json` and `tomllib` recurse once per nesting level (a deep document is a
`RecursionError`, at a depth that depends on the interpreter), and `tomllib` keeps
every prefix of a dotted key (`a.a.a.…` of 30,000 parts is gigabytes). Like the
YAML depth check (`yamlsource.too_deep`), these scans are turncheck's own, linear
in the text and never recursive, so a hostile file gets the same diagnostic at the
same `line:col` whatever the parser or the Python version would do with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_DATA_NESTING = 64
"""Levels of arrays, tables and dotted keys in a JSON or TOML file (YAML suites: 200)."""
MAX_DATA_ITEMS = 200_000
"""Values (array items, keys) in one JSON or TOML file: a 5 MiB array of small numbers
would otherwise become a gigabyte of Python objects."""

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{},:]', re.DOTALL)
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?(?:"""|\Z)|\'\'\'.*?(?:\'\'\'|\Z)|"(?:[^"\\\n]|\\.)*"?|\'[^\'\n]*\'?'
    r"|#[^\n]*|\n|[\[\]{},=.]",
    re.DOTALL,
)


@dataclass(frozen=True)
class StructureProblem:
    line: int
    column: int
    message: str


def _position(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _too_deep(text: str, offset: int, kind: str, limit: int) -> StructureProblem:
    message = f"{kind} nested more than {limit} levels deep"
    return StructureProblem(*_position(text, offset), message)


def _too_many(text: str, offset: int, kind: str, limit: int) -> StructureProblem:
    return StructureProblem(*_position(text, offset), f"{kind} has more than {limit:,} values")


def json_structure_problem(text: str, max_nesting: int = MAX_DATA_NESTING,
                           max_items: int = MAX_DATA_ITEMS) -> StructureProblem | None:
    """The first place where JSON `text` nests deeper or holds more values than allowed."""
    if text.count("[") + text.count("{") <= max_nesting and text.count(",") < max_items:
        return None
    depth = items = 0
    for token in _JSON_TOKENS.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > max_nesting:
                return _too_deep(text, token.start(), "JSON", max_nesting)
        elif char in "]}":
            depth -= 1
        elif char == ",":
            items += 1
            if items >= max_items:
                return _too_many(text, token.start(), "JSON", max_items)
    return None


class _TomlScan:
    """Depth = table header parts + dotted key parts + inline arrays and tables."""

    def __init__(self, text: str, max_nesting: int, max_items: int) -> None:
        self.text, self.max_nesting, self.max_items = text, max_nesting, max_items
        self.header_depth = 0
        self.inline: list[str] = []  # open "[" / "{" of values
        self.in_header = False
        self.line_start = True
        self.parts = 1  # parts of the key being read (header or key)
        self.in_key = True
        self.items = 0

    def run(self) -> StructureProblem | None:
        for token in _TOML_TOKENS.finditer(self.text):
            problem = self.step(token.group(), token.start())
            if problem is not None:
                return problem
        return None

    def step(self, token: str, offset: int) -> StructureProblem | None:
        char = token[0]
        if char == "\n":
            if not self.inline:
                self.line_start, self.in_key, self.parts = True, True, 1
            return None
        if char == "#":
            return None
        at_line_start, self.line_start = self.line_start, False
        if char == "[" and at_line_start and not self.inline:
            self.in_header, self.parts, self.header_depth = True, 1, 0
            return None
        if self.in_header:
            return self.header_step(char, offset)
        if char == "." and self.in_key:
            self.parts += 1
            return self.check_depth(offset)
        if char == "=":
            self.in_key = False
            return self.count_value(offset)
        if char in "[{":
            self.inline.append(char)
            self.in_key = char == "{"
            self.parts = 1
            return self.check_depth(offset)
        if char in "]}" and self.inline:
            self.inline.pop()
        elif char == ",":
            self.in_key = bool(self.inline) and self.inline[-1] == "{"
            self.parts = 1
            return self.count_value(offset)
        return None

    def header_step(self, char: str, offset: int) -> StructureProblem | None:
        if char == ".":
            self.parts += 1
            return self.check_depth(offset)
        if char == "]":
            self.in_header, self.header_depth = False, self.parts
            self.parts = 1
        return None

    def check_depth(self, offset: int) -> StructureProblem | None:
        header = 0 if self.in_header else self.header_depth
        if header + len(self.inline) + self.parts > self.max_nesting:
            return _too_deep(self.text, offset, "TOML", self.max_nesting)
        return None

    def count_value(self, offset: int) -> StructureProblem | None:
        self.items += 1
        if self.items >= self.max_items:
            return _too_many(self.text, offset, "TOML", self.max_items)
        return self.check_depth(offset)


def toml_structure_problem(text: str, max_nesting: int = MAX_DATA_NESTING,
                           max_items: int = MAX_DATA_ITEMS) -> StructureProblem | None:
    """The first place where TOML `text` nests deeper or holds more values than allowed
    (an upper bound: a `.`, `[` or `,` inside a string never counts)."""
    cheap = text.count(".") + text.count("[") + text.count("{")
    if cheap <= max_nesting and text.count(",") + text.count("=") < max_items:
        return None
    return _TomlScan(text, max_nesting, max_items).run()
