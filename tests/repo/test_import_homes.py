"""One home per name: `from turncheck.x.y import name` takes `name` from the module that
defines it, never from a module that imported it from elsewhere (a re-export chain
leaves a reader two places to look and lets the middle module's imports become an
API). Package faces (`__init__.py`: `turncheck`, `turncheck.report`, `turncheck.git`)
may re-export; a face is where a reader starts."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
CHECKED = ("src", "tests", "benchmarks", "tools")


def source_of(module: str) -> Path | None:
    path = SRC.joinpath(*module.split("."))
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else None


def _bound_names(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        yield from (n.id for target in node.targets for n in ast.walk(target)
                    if isinstance(n, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif isinstance(node, ast.If | ast.Try):  # `if TYPE_CHECKING:` aliases, fallbacks
        for child in (*node.body, *node.orelse, *getattr(node, "handlers", ())):
            yield from _bound_names(child) if isinstance(child, ast.stmt) else ()
            if isinstance(child, ast.ExceptHandler):
                for inner in child.body:
                    yield from _bound_names(inner)


@cache
def defined_in(module: str) -> frozenset[str]:
    path = source_of(module)
    assert path is not None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(name for node in tree.body for name in _bound_names(node))


def imports_through_other_modules(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.startswith("turncheck.")):
            continue
        source = source_of(node.module)
        if source is None or source.name == "__init__.py":
            continue
        for alias in node.names:
            if alias.name not in defined_in(node.module) \
                    and source_of(f"{node.module}.{alias.name}") is None:
                shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                yield f"{shown}:{node.lineno}: {node.module}.{alias.name}"


def test_every_name_is_imported_from_its_home() -> None:
    wrong = [line for folder in CHECKED for path in sorted((ROOT / folder).rglob("*.py"))
             for line in imports_through_other_modules(path)]
    assert wrong == []


def test_the_check_sees_a_re_export(tmp_path: Path) -> None:
    """`Status` is defined in `report.results`; `report.run` only imports it."""
    script = tmp_path / "uses.py"
    script.write_text("from turncheck.report.run import Status\n"
                      "from turncheck.report.results import Status as S\n")
    assert list(imports_through_other_modules(script)) == [
        "uses.py:1: turncheck.report.run.Status"]
