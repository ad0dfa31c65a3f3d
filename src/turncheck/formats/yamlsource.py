"""Safe YAML loading that remembers where every key and value came from.

PyYAML's safe composer (its C loader) gives us a node tree with marks; we turn it
into plain Python data, report duplicate keys (which PyYAML would silently collapse
to the last one) and unreadable values, and keep the node tree so that `Positions`
can tell the 1-based position of any key or value when a validator asks for it.
Recording a position for every node up front cost more than the rest of loading
(see benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml

from turncheck.diagnostics import Diagnostic, error

Path = tuple[str | int, ...]

MAX_YAML_BYTES = 5 * 1024 * 1024
MAX_NESTING = 200
MAX_NODES = 1_000_000
"""Caps alias expansion ("billion laughs"): aliases re-walk their anchor's subtree."""
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_IMPLICIT_FIRST = frozenset(_BASE_LOADER.yaml_implicit_resolvers)
"""First characters of the plain scalars an implicit resolver may turn into non-strings
(a `None` among them would be a resolver for every scalar: then nothing is skipped)."""
_STR_TAG = "tag:yaml.org,2002:str"
_COLLECTION_TAGS: dict[type[yaml.Node], str] = {
    yaml.MappingNode: _BASE_LOADER.DEFAULT_MAPPING_TAG,
    yaml.SequenceNode: _BASE_LOADER.DEFAULT_SEQUENCE_TAG,
}
_PLAIN_TAGS: dict[str, str] = {}
_PLAIN_TAGS_MAX = 4096
_PLAIN_TAG_TEXT_MAX = 40


class _SafeLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """PyYAML's safe (C) loader, with the tag resolution it calls for every node made cheap.

    Same tags as `SafeLoader`: no path resolvers exist, so descending and ascending
    do nothing, and a plain scalar whose first character no implicit resolver
    handles (most text) is a string without trying any pattern.
    """

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not yaml.ScalarNode:
            return _COLLECTION_TAGS.get(kind) or super().resolve(kind, value, implicit)
        if not implicit[0] or (value[:1] not in _IMPLICIT_FIRST and None not in _IMPLICIT_FIRST):
            return _STR_TAG
        # A plain scalar's tag depends on its text alone: short ones (keys such as
        # "name" or "not_match", numbers, booleans) are remembered.
        tag = _PLAIN_TAGS.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= _PLAIN_TAG_TEXT_MAX and len(_PLAIN_TAGS) < _PLAIN_TAGS_MAX:
                _PLAIN_TAGS[value] = tag
        return tag


_SAFE_LOADER: type[yaml.SafeLoader] = _SafeLoader
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
_START_NODE = yaml.ScalarNode("", "", yaml.Mark("", 0, 0, 0, "", 0))
"""Stands for "no document": its mark is `START`."""
_SCALAR_NODE = yaml.ScalarNode
_MAPPING_NODE = yaml.MappingNode
_SEQUENCE_NODE = yaml.SequenceNode
_SCALAR_ERRORS = (yaml.YAMLError, ValueError, OverflowError)
_SAFE_SCALARS = yaml.constructor.SafeConstructor()
"""Builds the plain scalar types; their constructors keep no state, so one serves all."""
_SCALAR_BUILDERS: dict[str, Any] = {
    tag: yaml.constructor.SafeConstructor.yaml_constructors[tag]
    for tag in ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
}
_new_pos = tuple.__new__
"""Builds a `Pos` without the Python-level `__new__` of NamedTuple (hot in validators)."""
_Found = tuple[yaml.Node | None, yaml.Node]
"""A path's key node (None for a sequence item or the document) and value node."""


def _construct_scalar(node: yaml.Node) -> Any:
    """The Python value of a scalar node, as PyYAML's safe loader builds it; may raise."""
    build = _SCALAR_BUILDERS.get(node.tag)
    if build is not None:
        return build(_SAFE_SCALARS, node)
    # Other tags (binary, unknown local tags, ...): PyYAML's own dispatch, fresh state.
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def _key_text(node: yaml.Node, value: Any) -> str | None:
    """The key a scalar key node stands for, given its value; None if keys cannot be that."""
    if isinstance(value, str | int | float | bool) or value is None:
        return str(node.value) if value is None else str(value)
    return None


def _quiet_key(node: yaml.Node) -> str | None:
    """The key `_Converter` reads from a key node, without reporting anything."""
    if node.__class__ is not _SCALAR_NODE:
        return None
    if node.tag == _STR_TAG:
        return str(node.value)
    try:
        value = _construct_scalar(node)
    except _SCALAR_ERRORS:
        value = None
    return _key_text(node, value)


class Positions:
    """Where each path's key and value start (1-based).

    Looked up on demand in the composed node tree rather than recorded for every node
    while converting: validators ask for a few paths per eval, not for every scalar.
    A path resolves exactly as the converter built the data: the first of duplicate
    keys, keys read as the converter reads them, sequence items by index.
    """

    def __init__(self, root: yaml.Node | None = None) -> None:
        self._root = root
        self._tables: dict[yaml.Node, dict[str, _Found]] = {}
        self._walked: dict[Path, tuple[yaml.Node | None, yaml.Node, bool]] = {}

    def key(self, path: Path) -> Pos:
        key_node, node, complete = self._walk(path)
        mark = (key_node if complete and key_node is not None else node).start_mark
        return _new_pos(Pos, (mark.line + 1, mark.column + 1))

    def value(self, path: Path) -> Pos:
        mark = self._walk(path)[1].start_mark
        return _new_pos(Pos, (mark.line + 1, mark.column + 1))

    def _walk(self, path: Path) -> tuple[yaml.Node | None, yaml.Node, bool]:
        """The key and value nodes of `path`, or of its longest present prefix (False)."""
        found = self._walked.get(path)
        if found is None:
            # Validators ask for a node's children one after another: each step starts
            # from the parent's (remembered) node rather than from the root.
            found = self._step(self._walk(path[:-1]), path[-1]) if path \
                else (None, self._root or _START_NODE, self._root is not None)
            self._walked[path] = found
        return found

    def _step(self, parent: tuple[yaml.Node | None, yaml.Node, bool],
              part: str | int) -> tuple[yaml.Node | None, yaml.Node, bool]:
        node, complete = parent[1], parent[2]
        if not complete:
            return None, node, False
        kind = node.__class__
        if kind is _MAPPING_NODE and part.__class__ is str:
            table = self._tables.get(node)
            pair = (table if table is not None else self._table(node)).get(part)
            return (None, node, False) if pair is None else (pair[0], pair[1], True)
        if kind is _SEQUENCE_NODE and part.__class__ is int and 0 <= part < len(node.value):
            return None, node.value[part], True
        return None, node, False

    def _table(self, node: yaml.Node) -> dict[str, _Found]:
        table: dict[str, _Found] = {}
        for pair in node.value:
            key_node = pair[0]
            if key_node.__class__ is _SCALAR_NODE and key_node.tag == _STR_TAG:
                key = key_node.value
            else:
                key = _quiet_key(key_node)
                if key is None:
                    continue
            if key not in table:
                table[key] = pair
        self._tables[node] = table
        return table


@dataclass
class LoadedYaml:
    data: Any
    positions: Positions
    diagnostics: list[Diagnostic]


class _TooBig(Exception):
    """Stops converting a document that exceeds the structure limits."""


class _Converter:
    """Plain data from a composed node tree, reporting bad values and duplicate keys.

    Hot loop: a suite has hundreds of nodes, nearly all plain string scalars, so those
    are read inline (one class test and one tag test) instead of through `convert`;
    the depth and node-count limits still apply to every node in document order.
    """

    def __init__(self, file: str) -> None:
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self._nodes = 0

    def convert(self, node: yaml.Node, depth: int) -> Any:
        """The value of `node`, found at `depth` (the length of its path)."""
        self._nodes += 1
        if depth > MAX_NESTING:
            self._error(node.start_mark, "yaml-structure", NESTED_TOO_DEEPLY)
            raise _TooBig
        if self._nodes > MAX_NODES:
            self._error(node.start_mark, "yaml-structure", "recursive or too large YAML (aliases?)")
            raise _TooBig
        kind = node.__class__
        if kind is _MAPPING_NODE:
            return self._mapping(node, depth + 1)
        if kind is _SEQUENCE_NODE:
            return self._sequence(node, depth + 1)
        return self._scalar(node)

    def _sequence(self, node: yaml.Node, depth: int) -> list[Any]:
        items: list[Any] = []
        inline = depth <= MAX_NESTING
        for item in node.value:
            if inline and item.__class__ is _SCALAR_NODE and self._nodes < MAX_NODES:
                self._nodes += 1
                items.append(item.value if item.tag == _STR_TAG else self._scalar(item))
            else:
                items.append(self.convert(item, depth))
        return items

    def _mapping(self, node: yaml.Node, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        inline = depth <= MAX_NESTING
        for key_node, value_node in node.value:
            if key_node.__class__ is _SCALAR_NODE and key_node.tag == _STR_TAG:
                key = key_node.value
            else:
                key = self._key(key_node)
                if key is None:
                    continue
            if key in result:
                self._duplicate(node, key_node, key)
                continue
            if inline and value_node.__class__ is _SCALAR_NODE and self._nodes < MAX_NODES:
                self._nodes += 1
                result[key] = (value_node.value if value_node.tag == _STR_TAG
                               else self._scalar(value_node))
            else:
                result[key] = self.convert(value_node, depth)
        return result

    def _scalar(self, node: yaml.Node) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        try:
            return _construct_scalar(node)
        except _SCALAR_ERRORS as exc:
            self._error(node.start_mark, "yaml-value", f"cannot read this value: {exc}")
            return None

    def _key(self, key_node: yaml.Node) -> str | None:
        if isinstance(key_node, yaml.ScalarNode):
            key = _key_text(key_node, self._scalar(key_node))
            if key is not None:
                return key
        self._error(key_node.start_mark, "yaml-structure", "mapping keys must be plain strings")
        return None

    def _duplicate(self, mapping: yaml.Node, key_node: yaml.Node, key: str) -> None:
        first = next(k for k, _ in mapping.value if _quiet_key(k) == key)
        self._error(
            key_node.start_mark,
            "duplicate-key",
            f'duplicate key "{key}" (first defined at line {first.start_mark.line + 1}); '
            "YAML would silently keep only the last one",
        )

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
    and only runs when the cheap bound cannot rule deep nesting out. libyaml 0.2.6
    (bundled with PyYAML 6.0.4) refuses nesting beyond its own limit (1,000 levels)
    before it yields the events that show where ours is passed, so the same
    document would get its diagnostic from the parser instead of from turncheck:
    then the pure-Python parser, which has no limit, finds the position. It stops
    at the first level past `limit`, so only the text before that is read slowly.
    """
    if nesting_upper_bound(text) <= SAFE_NESTING_BOUND:  # the converter checks `limit`
        return None
    try:
        return _first_too_deep(yaml.parse(text, Loader=_SAFE_LOADER), limit)
    except yaml.YAMLError as exc:
        if not is_parser_nesting_limit(exc):
            raise
    return _first_too_deep(yaml.parse(text, Loader=yaml.SafeLoader), limit) or START


def is_parser_nesting_limit(exc: yaml.YAMLError) -> bool:
    """True for the parser's own nesting limit (libyaml ≥ 0.2.6), not a syntax error."""
    return "maximum nesting depth" in str(getattr(exc, "problem", None) or exc)


def _first_too_deep(events: Iterable[yaml.Event], limit: int) -> Pos | None:
    depth = -1  # the document's top collection is level 0, as in `_Converter`
    for event in events:
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
        data = converter.convert(node, 0)
    except _TooBig:
        data = None
    except RecursionError:
        converter.diagnostics.append(
            error(file, 1, 1, "yaml-structure", "YAML nested too deeply to read")
        )
        data = None
    return LoadedYaml(data, Positions(node), converter.diagnostics)
