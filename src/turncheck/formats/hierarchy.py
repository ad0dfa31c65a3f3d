"""Hierarchies of names (gating trees), as written in case data and extracted from responses.

In case data (YAML or JSON) a hierarchy is any of:

- a name: `Singlets`;
- a list of nodes;
- a node with children as a one-key mapping: `{Singlets: [Live, ...]}` (children
  may be null), or as `{name: Singlets, children: [...]}`;
- a mapping of names to children: `{Singlets: {Live: null}}`.

The functions here are also the Jinja filters protocol templates may use
(`names`, `subtree`, `outline`, `precedence`, `intersect`, `difference`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turncheck.formats.names import DEFAULT_THRESHOLD, same

MAX_NODES = 10_000


@dataclass(frozen=True)
class Node:
    name: str
    children: tuple[Node, ...] = field(default=())

    def walk(self, depth: int = 1) -> Iterator[tuple[int, Node]]:
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def as_data(self) -> dict[str, Any]:
        return {"name": self.name, "children": [c.as_data() for c in self.children]}


class HierarchyError(ValueError):
    """A value that is not a hierarchy of names."""


def as_nodes(value: Any) -> list[Node]:
    """`value` (see the module docstring) as a list of root nodes."""
    counter = [0]
    return _nodes(value, counter, 0)


def _node(name: Any, children: Any, counter: list[int], depth: int) -> Node:
    counter[0] += 1
    if counter[0] > MAX_NODES or depth > 100:
        raise HierarchyError("hierarchy too large or too deep")
    if not isinstance(name, str | int | float) or isinstance(name, bool) or str(name) == "":
        raise HierarchyError(f"a population name must be a non-empty string, got {name!r}")
    return Node(str(name), tuple(_nodes(children, counter, depth + 1)))


def _nodes(value: Any, counter: list[int], depth: int) -> list[Node]:
    if value is None:
        return []
    if isinstance(value, Node):
        return [value]
    if isinstance(value, str):
        return [_node(value, None, counter, depth)]
    if isinstance(value, Mapping):
        if "name" in value and set(value) <= {"name", "children"}:
            return [_node(value["name"], value.get("children"), counter, depth)]
        return [_node(key, children, counter, depth) for key, children in value.items()]
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        found: list[Node] = []
        for item in value:
            found.extend(_nodes(item, counter, depth))
        return found
    raise HierarchyError(f"expected names or a hierarchy of names, got {type(value).__name__}")


def walk(value: Any) -> Iterator[tuple[int, Node]]:
    for root in as_nodes(value):
        yield from root.walk()


def names(value: Any, depth: int | None = None) -> list[str]:
    """Every name in the hierarchy, parents before children (down to `depth` levels)."""
    return [node.name for level, node in walk(value) if depth is None or level <= depth]


def subtree(value: Any, name: str, threshold: float = DEFAULT_THRESHOLD) -> list[Node]:
    """The children of the first population matching `name` (fuzzy); an error if none does."""
    for _, node in walk(value):
        if same(node.name, str(name), threshold):
            return list(node.children)
    raise HierarchyError(f"no population named {name!r} in the hierarchy")


def outline(value: Any, indent: str = "  ", bullet: str = "- ") -> str:
    """The hierarchy as an indented bullet list."""
    return "\n".join(f"{indent * (level - 1)}{bullet}{node.name}" for level, node in walk(value))


def precedence(value: Any) -> list[list[str]]:
    """[parent, child] for every edge: the order in which gates must be applied."""
    pairs: list[list[str]] = []

    def visit(node: Node) -> None:
        for child in node.children:
            pairs.append([node.name, child.name])
            visit(child)

    for root in as_nodes(value):
        visit(root)
    return pairs


def intersect(value: Any, other: Any, threshold: float = DEFAULT_THRESHOLD) -> list[str]:
    """Names of `value` that match (fuzzy) a name of `other`."""
    others = names(other)
    return [name for name in names(value) if any(same(name, o, threshold) for o in others)]


def difference(value: Any, other: Any, threshold: float = DEFAULT_THRESHOLD) -> list[str]:
    """Names of `value` that match no name of `other`."""
    others = names(other)
    return [name for name in names(value) if not any(same(name, o, threshold) for o in others)]


FILTERS = {
    "names": names,
    "subtree": subtree,
    "outline": outline,
    "precedence": precedence,
    "intersect": intersect,
    "difference": difference,
}
