"""The import graph of `turncheck` has no cycles and follows the layer direction
formats → providers → targets → engine (+ stats) → compare → render → github / cli; `text`
(Markdown escaping, money, the sandboxed Jinja environment) is usable by all; `git`
(commands, changes, work trees) stands alone at the bottom, and `sides` (the
two-commit runner) sits on the engine and git, below github and cli. The package face
(`turncheck/__init__.py`, the public API in `_api.py`, `__main__`) sits above everything
and nothing imports it; the project configuration (`config.py`) sits on compare, below
github and cli; the other top-level modules (`_version`, `diagnostics`, …) are ground.

Every `import` counts, wherever it stands (module level, inside a function, under
`TYPE_CHECKING`): a lazy or type-only import still ties the two modules together.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Container, Iterator
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "turncheck"
# Which parts each part may import (besides itself, `text` and the ground).
BELOW: dict[str, set[str]] = {
    "ground": set(),
    "text": set(),
    "stats": set(),
    "formats": set(),
    "git": set(),
    "report": {"stats", "formats"},  # formats.files: the one place files are opened
    "providers": {"formats", "report"},
    "targets": {"formats", "report", "providers", "stats"},
    "engine": {"formats", "providers", "targets", "stats", "report"},
    # The two-commit runner needs the engine and git, nothing that compares or renders:
    # its callers (the action, `diff`) compare and publish the two reports themselves.
    "sides": {"formats", "providers", "targets", "stats", "report", "engine", "git"},
    "compare": {"formats", "providers", "targets", "stats", "report", "engine"},
    "render": {"formats", "providers", "targets", "stats", "report", "engine", "compare"},
    # The project configuration checks its `fail_on` with compare's parser.
    "config": {"formats", "providers", "targets", "stats", "report", "engine", "compare"},
    "github": {"formats", "providers", "targets", "stats", "report", "engine", "git", "sides",
               "compare", "render", "config"},
    "cli": {"formats", "providers", "targets", "stats", "report", "engine", "git", "sides",
            "compare", "render", "github", "config"},
}
BELOW["face"] = set().union(*BELOW.values()) | set(BELOW)
LAYERS = {layer: below | {"text", "ground"} for layer, below in BELOW.items()}
LAYERS["ground"] = {"ground"}
TOP_LEVEL = {"turncheck": "face", "turncheck._api": "face", "turncheck.__main__": "face",
             "turncheck.config": "config"}
"""Top-level modules with a layer of their own; the others are ground."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.AST, module: str, is_package: bool,
              modules: Container[str]) -> Iterator[str]:
    """What `node` imports: `from turncheck import git` imports the subpackage `git`
    (and runs the face only as Python runs every parent package), `from turncheck import
    __version__` imports the face."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        for alias in node.names:
            submodule = f"{prefix}.{alias.name}"
            yield submodule if submodule in modules else prefix


@cache
def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {name for node in ast.walk(tree)
                   for name in _imported(node, module, path.name == "__init__.py", files)}
        graph[module] = {t for t in targets if t in files and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            # A package's __init__ re-exporting its own modules is not a cycle of logic.
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def part(module: str) -> str:
    pieces = module.split(".")
    if len(pieces) > 2 or (len(pieces) == 2 and pieces[1] in BELOW):
        return pieces[1]
    return TOP_LEVEL.get(module, "ground")


def test_no_import_cycles_between_turncheck_modules() -> None:
    """Package `__init__`s (the face included) count like any module: a subpackage that
    imports its parent's face while the face imports it is a cycle."""
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below(layer: str) -> None:
    allowed = LAYERS[layer] | {layer}
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in import_graph().items() if part(module) == layer
        for target in targets if part(target) not in allowed
    )
    assert wrong == []


def test_every_top_level_module_has_a_layer() -> None:
    """A new top-level module lands in the ground unless it says otherwise: then it may
    import only ground modules, which the layer test checks."""
    assert {part("turncheck"), part("turncheck._api"), part("turncheck._version")} == {
        "face", "ground"}


def test_the_graph_sees_lazy_and_type_only_imports() -> None:
    graph = import_graph()
    assert "turncheck.report.run" in graph["turncheck.engine.runner"]
    assert len(graph) > 100


def source_of(module: str) -> Path:
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_names(module: str) -> Iterator[tuple[str, str]]:
    """(module, name) of every `from turncheck.… import name` in `module`, wherever it
    stands."""
    for node in ast.walk(ast.parse(source_of(module).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.startswith("turncheck."):
            yield from ((node.module, alias.name) for alias in node.names)


REPORT_TYPE_HOMES = ("report", "stats", "ground")
"""Where compare and render may take the documents' models from (the ground: the
package's top-level modules, such as `turncheck.diagnostics`)."""


@pytest.mark.parametrize("layer", ["compare", "render"])
def test_compare_and_render_take_report_types_only_from_report(layer: str) -> None:
    """A model of a document (a pydantic model) that compare or render use is defined in
    `report/` (or `stats/`), never in engine, formats, providers or compare."""
    from pydantic import BaseModel

    wrong = []
    for module in import_graph():
        if part(module) != layer:
            continue
        for source, name in imported_names(module):
            value = getattr(importlib.import_module(source), name, None)
            if isinstance(value, type) and issubclass(value, BaseModel) \
                    and part(value.__module__) not in REPORT_TYPE_HOMES:
                wrong.append(f"{module} takes {name} from {value.__module__}")
    assert wrong == []


RENDERING = {"turncheck.render.display", "turncheck.render.columns",
             "turncheck.render.severity", "turncheck.render.headline", "turncheck.text.money",
             "turncheck.text.markdown"}
"""What lays out tables, figures and verdict words: render's own building blocks (a
message's "2 suites" may still say its noun in the right number, `text.counts`)."""
ALIGNING = {"ljust", "rjust", "center"}


def test_cli_renders_nothing_itself() -> None:
    """cli/ parses arguments and calls render/ for output: none of its modules imports
    the building blocks of tables, money or verdicts, nor aligns columns itself."""
    wrong = []
    for module, targets in import_graph().items():
        if part(module) != "cli":
            continue
        wrong += [f"{module} imports {target}" for target in sorted(targets & RENDERING)]
        wrong += [f"{module} aligns with {node.func.attr} (line {node.lineno})"
                  for node in ast.walk(ast.parse(source_of(module).read_text(encoding="utf-8")))
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ALIGNING]
    assert wrong == []


def test_the_rules_above_see_what_they_forbid() -> None:
    """The two tests above can fail: their probes find what they look for."""
    assert ("turncheck.report.comparison", "Comparison") in set(
        imported_names("turncheck.render.comment"))
    assert "turncheck.render.display" in import_graph()["turncheck.render.console"]
