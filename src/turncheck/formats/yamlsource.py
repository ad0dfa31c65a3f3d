"""Safe YAML loading that remembers where every key and value came from.

PyYAML's safe composer gives us a node tree with marks; we turn it into plain
Python data while recording the 1-based position of each key and value, and we
report duplicate keys, which PyYAML would silently collapse to the last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import yaml

from turncheck.diagnostics import Diagnostic, error

Path = tuple[str | int, ...]

MAX_YAML_BYTES = 5 * 1024 * 1024
MAX_NESTING = 200
MAX_NODES = 1_000_000
"""Caps alias expansion ("billion laughs"): aliases re-walk their anchor's subtree."""
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NESTED_TOO_DEEPLY = f"YAML nested more than {MAX_NESTING} levels deep"
SAFE_NESTING_BOUND = 1_000
"""Below this many levels PyYAML's (recursive) composer is safe; it segfaults at ~20,000."""
_OPENING_EVENTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSING_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class Pos(NamedTuple):
    line: int
    column: int

    @staticmethod
    def of(mark: yaml.Mark) -> Pos:
        return Pos(mark.line + 1, mark.column + 1)


START = Pos(1, 1)
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass
class Positions:
    """Where each path's key and value start (1-based)."""

    keys: dict[Path, Pos] = field(default_factory=dict)
    values: dict[Path, Pos] = field(default_factory=dict)

    def key(self, path: Path) -> Pos:
        return self.keys.get(path) or self.value(path)

    def value(self, path: Path) -> Pos:
        for end in range(len(path), -1, -1):
            pos = self.values.get(path[:end])
            if pos is not None:
                return pos
        return START


@dataclass
class LoadedYaml:
    data: Any
    positions: Positions
    diagnostics: list[Diagnostic]


class _TooBig(Exception):
    """Stops converting a document that exceeds the structure limits."""


class _Converter:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions = Positions()
        self.diagnostics: list[Diagnostic] = []
        self._scalars = yaml.constructor.SafeConstructor()
        self._nodes = 0

    def convert(self, node: yaml.Node, path: Path) -> Any:
        mark = node.start_mark
        self.positions.values[path] = Pos(mark.line + 1, mark.column + 1)
        self._nodes += 1
        if len(path) > MAX_NESTING:
            self._error(mark, "yaml-structure", NESTED_TOO_DEEPLY)
            raise _TooBig
        if self._nodes > MAX_NODES:
            self._error(mark, "yaml-structure", "recursive or too large YAML (aliases?)")
            raise _TooBig
        return self._convert_node(node, path)

    def _convert_node(self, node: yaml.Node, path: Path) -> Any:
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        try:
            return self._scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            self._error(node.start_mark, "yaml-value", f"cannot read this value: {exc}")
            return None

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, Pos] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node)
            if key is None:
                continue
            key_pos = Pos.of(key_node.start_mark)
            if key in first_seen:
                earlier = first_seen[key]
                self._error(
                    key_node.start_mark,
                    "duplicate-key",
                    f'duplicate key "{key}" (first defined at line {earlier.line}); '
                    "YAML would silently keep only the last one",
                )
                continue
            first_seen[key] = key_pos
            self.positions.keys[(*path, key)] = key_pos
            result[key] = self.convert(value_node, (*path, key))
        return result

    def _key(self, key_node: yaml.Node) -> str | None:
        if isinstance(key_node, yaml.ScalarNode):
            value = self._scalar(key_node)
            if isinstance(value, str | int | float | bool) or value is None:
                return key_node.value if value is None else str(value)
        self._error(key_node.start_mark, "yaml-structure", "mapping keys must be plain strings")
        return None

    def _error(self, mark: yaml.Mark, code: str, message: str) -> None:
        pos = Pos.of(mark)
        self.diagnostics.append(error(self.file, pos.line, pos.column, code, message))


def _syntax_diagnostic(file: str, exc: yaml.YAMLError) -> Diagnostic:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    pos = Pos.of(mark) if mark is not None else START
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    if problem and "mapping values are not allowed" in problem:
        message += '; a value containing ": " must be quoted, e.g. prompt: "Hint: 15 * 7 = …"'
    return error(file, pos.line, pos.column, "yaml-syntax", message)


def nesting_upper_bound(text: str) -> int:
    """A cheap upper bound on the nesting depth of any YAML document in `text`.

    Flow collections nest at most once per `[` or `{` in the text; block
    collections nest at most once per column of a line (each level is indented
    further, or introduced by an indicator such as `- ` on the same line).
    """
    longest_line = max((len(line) for line in text.splitlines()), default=0)
    return text.count("[") + text.count("{") + longest_line


def too_deep(text: str, limit: int = MAX_NESTING) -> Pos | None:
    """Where the nesting first exceeds `limit`, or None; never recurses.

    The exact check walks libyaml's event stream (a state machine, no recursion),
    and only runs when the cheap bound cannot rule deep nesting out.
    """
    if nesting_upper_bound(text) <= SAFE_NESTING_BOUND:  # the converter checks `limit`
        return None
    depth = -1  # the document's top collection is level 0, as in `_Converter`
    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, _OPENING_EVENTS):
            depth += 1
            if depth > limit:
                mark = event.start_mark
                return START if mark is None else Pos(mark.line + 1, mark.column + 1)
        elif isinstance(event, _CLOSING_EVENTS):
            depth -= 1
    return None


def load_yaml(text: str, file: str) -> LoadedYaml:
    """Compose one YAML document safely; never raises on bad input."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        big = error(file, 1, 1, "file-too-large", f"file is larger than {MAX_YAML_BYTES} bytes")
        return LoadedYaml(None, Positions(), [big])
    try:
        where = too_deep(text)
        if where is not None:
            nested = error(file, where.line, where.column, "yaml-structure", NESTED_TOO_DEEPLY)
            return LoadedYaml(None, Positions(), [nested])
        node = yaml.compose(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        return LoadedYaml(None, Positions(), [_syntax_diagnostic(file, exc)])
    except RecursionError:
        deep = error(file, 1, 1, "yaml-structure", "YAML nested too deeply to read")
        return LoadedYaml(None, Positions(), [deep])
    if node is None:
        return LoadedYaml(None, Positions(), [])
    converter = _Converter(file)
    try:
        data = converter.convert(node, ())
    except _TooBig:
        data = None
    except RecursionError:
        converter.diagnostics.append(
            error(file, 1, 1, "yaml-structure", "YAML nested too deeply to read")
        )
        data = None
    return LoadedYaml(data, converter.positions, converter.diagnostics)
