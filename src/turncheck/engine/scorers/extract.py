"""Extract a list or a hierarchy of names from a model's response.

Tried in order:

1. JSON: a fenced code block, or the first `[`/`{` … `]`/`}` span that parses, holding
   a list of names, nested `{"name": …, "children": […]}` objects (also `gate`,
   `population` / `subpopulations`, `subsets`), or a mapping of names to children;
2. lines: bullets (`-`, `*`, `+`, `•`), numbered lines (`1.`, `1)`, `a.`), with
   indentation giving the hierarchy; a short line ending in `:` (e.g. `**Lymphocytes:**`)
   is a parent of the bullets that follow it; arrows (`A > B > C`, `A → B`, `A -> B`)
   are a chain of nested gates;
3. when neither finds anything: a line with at least two commas is split into names.

Each item is cleaned: markdown emphasis dropped, `Gate 1:`/`Step 2.` prefixes dropped,
the text after `: ` or ` - ` dropped (an explanation), parentheses kept only when they
hold markers (`(CD3+)`), trailing punctuation dropped. Items longer than
`MAX_NAME_WORDS` words are prose, not names, and are skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from turncheck.formats.hierarchy import HierarchyError, Node, outline
from turncheck.formats.names import unique_names

MAX_NAME_WORDS = 8
MAX_JSON_CHARS = 200_000
# A pattern that starts with \s* or \s+ begins with (?!(?<=\s)\s): a match cannot start
# inside a whitespace run (one from the run's start covers it), so a hostile answer
# of long whitespace runs costs linear time instead of quadratic (benchmarks/hostile.py).
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n(?P<body>.*?)```", re.DOTALL)
_BULLET = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*+•‣◦▪●]|\d{1,3}[.)]|[a-zA-Z][.)])\s+(?P<text>\S.*)$"
)
_HEADER = re.compile(r"^(?P<indent>[ \t]*+)(?:#{1,6}\s+)?(?P<text>[^:]{1,80}):\s*$")
_ARROW = re.compile(r"(?!(?<=\s)\s)\s*(?:→|->|=>|⟶|>)\s*")
_PREFIX = re.compile(r"^(?:gate|step|level|stage|tier)\s*\d+\s*[:.)\-–]\s*", re.IGNORECASE)
_EXPLANATION = re.compile(r"(?!(?<=\s)\s)\s+[-–—]\s+|:\s+|:$")
_PARENTHESES = re.compile(r"(?!(?<=\s)\s)\s*\(([^()]*)\)")
_MARKERISH = re.compile(
    r"^(?:[A-Za-z]{1,6}[- ]?\d+[A-Za-z]*|[A-Za-z]{2,6}-?[A-Za-z]{0,3})"
    r"\s*(?:\+\+|\+|-|−|hi|lo|dim|bright|high|low|pos|neg)?$"
)
_PROSE_TEXT = (
    "here is are was were be would will should could can i you we my your our this these "
    "those following below above strategy steps step answer summary example note notes "
    "overview explanation rationale reasoning hierarchy gating sure okay ok"
)
_PROSE_WORDS = frozenset(_PROSE_TEXT.split())
_LIST_LEAD = re.compile(r"^.*\b(?:on|are|is|include|includes|including|be|with|as)\s+",
                        re.IGNORECASE)
_CHILD_KEYS = ("children", "subpopulations", "subsets", "gates", "populations")
_NAME_KEYS = ("name", "gate", "population", "label")


@dataclass
class _Builder:
    name: str
    children: list[_Builder] = field(default_factory=list)

    def freeze(self) -> Node:
        return Node(self.name, tuple(child.freeze() for child in self.children))


@dataclass(frozen=True)
class Extraction:
    roots: tuple[Node, ...]

    @property
    def names(self) -> list[str]:
        """Every extracted name once (first spelling), parents before children."""
        return unique_names(node.name for root in self.roots for _, node in root.walk())

    @property
    def outline(self) -> str:
        return outline(list(self.roots))


def clean_name(text: str) -> str | None:
    """The population name in one list item, or None when the item is prose."""
    name = text.replace("**", "").replace("__", "").replace("`", "").strip()
    name = name.strip("*_ ")
    name = _PREFIX.sub("", name)
    parts = _EXPLANATION.split(name, maxsplit=1)
    if parts and parts[0].strip():
        name = parts[0]
    name = _PARENTHESES.sub(_keep_markers, name)
    name = name.strip().rstrip(".,;:!?").strip()
    if not name or len(name.split()) > MAX_NAME_WORDS:
        return None
    return name


def _keep_markers(match: re.Match[str]) -> str:
    inside = match.group(1).strip()
    parts = [p for p in re.split(r"[\s,/]+", inside) if p]
    if parts and all(_MARKERISH.match(p) and re.search(r"\d|[+\-−]", p) for p in parts):
        return f" ({inside})"
    return ""


# -- JSON ----------------------------------------------------------------------------


def _json_candidates(text: str) -> list[str]:
    found = [m["body"] for m in _FENCE.finditer(text)]
    spans = []
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            spans.append((start, text[start : end + 1]))
    found += [span for _, span in sorted(spans)]  # the outermost structure first
    return [c for c in found if len(c) <= MAX_JSON_CHARS]


def _json_nodes(value: Any, depth: int = 0) -> list[_Builder]:
    if depth > 50:
        raise HierarchyError("too deep")
    if isinstance(value, str):
        name = clean_name(value)
        return [_Builder(name)] if name else []
    if isinstance(value, list):
        return [node for item in value for node in _json_nodes(item, depth + 1)]
    if isinstance(value, dict):
        name_key = next((k for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
        if name_key is not None:
            child_key = next((k for k in _CHILD_KEYS if k in value), None)
            node = _Builder(str(value[name_key]).strip())
            if child_key is not None:
                node.children = _json_nodes(value[child_key], depth + 1)
            return [node] if node.name else []
        built = []
        for key, children in value.items():
            name = clean_name(str(key))
            if name:
                built.append(_Builder(name, _json_nodes(children, depth + 1)))
        return built
    return []


def _from_json(text: str) -> list[_Builder]:
    for candidate in _json_candidates(text):
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        try:
            nodes = _json_nodes(value)
        except (HierarchyError, RecursionError):
            continue
        if nodes:
            return nodes
    return []


# -- lines ---------------------------------------------------------------------------


def _width(indent: str) -> int:
    return len(indent.replace("\t", "    "))


def _chain(text: str) -> list[str]:
    """Names in an item; several when it is an arrow chain."""
    if re.search(r"→|->|=>|⟶|\S\s*>\s*\S", text):
        parts = [clean_name(p) for p in _ARROW.split(text)]
        names = [p for p in parts if p]
        if len(names) >= 2 and len(names) == len([p for p in _ARROW.split(text) if p.strip()]):
            return names
    name = clean_name(text)
    return [name] if name else []


def _from_lines(text: str) -> list[_Builder]:
    roots: list[_Builder] = []
    stack: list[tuple[float, _Builder]] = []
    in_fence = False
    for raw in text.splitlines():
        if raw.strip().startswith("```"):
            in_fence = not in_fence
            continue
        line = raw.rstrip()
        if not line.strip():
            continue
        quoted = re.match(r"^(\s*)>\s?(.*)$", line)
        if quoted:
            line = quoted.group(1) + quoted.group(2)
        bullet = _BULLET.match(line)
        level: float
        if bullet:
            level, names = _width(bullet["indent"]), _chain(bullet["text"])
        elif (header := _HEADER.match(line.replace("**", ""))) and _is_header(header["text"]):
            level, names = _width(header["indent"]) - 0.5, _chain(header["text"])
        elif _ARROW.search(line) and len(_chain(line.strip())) >= 2:
            level, names = _width(line[: len(line) - len(line.lstrip())]), _chain(line.strip())
        else:
            continue
        if not names:
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent_children = stack[-1][1].children if stack else roots
        node = _Builder(names[0])
        parent_children.append(node)
        for name in names[1:]:
            child = _Builder(name)
            node.children.append(child)
            node = child
        stack.append((level, node))
    return roots


def _is_header(text: str) -> bool:
    """A short label such as `Lymphocytes:`, not a lead-in such as `Here is my plan:`."""
    words = re.findall(r"[A-Za-z']+", text.lower().replace("#", ""))
    return 0 < len(text.split()) <= 5 and not any(w in _PROSE_WORDS for w in words)


def _from_commas(text: str) -> list[_Builder]:
    for line in text.splitlines():
        if line.count(",") >= 2:
            body = line.strip().rstrip(".")
            body = body.rsplit(":", 1)[-1] if ":" in body else _LIST_LEAD.sub("", body, count=1)
            parts = re.split(r",\s*(?:and\s+)?|(?!(?<=\s)\s)\s+and\s+", body)
            names = [n for n in (clean_name(p) for p in parts) if n]
            if len(names) >= 3:
                return [_Builder(n) for n in names]
    return []


def extract(text: str) -> Extraction:
    """The names (and their hierarchy) the response lists."""
    builders = _from_json(text) or _from_lines(text) or _from_commas(text)
    return Extraction(tuple(b.freeze() for b in builders))
