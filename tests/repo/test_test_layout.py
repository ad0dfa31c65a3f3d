"""The tests are grouped by level (docs/design.md, "Tests, by level"): every test
module lives in one level's folder, and the unit level stays quick because it starts
nothing: no subprocess, no server, no git repository, no socket."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LEVELS = ("unit", "integration", "e2e", "golden", "repo")
# What a unit test may not reach: processes, servers and repositories belong to the
# integration level and above.
NOT_IN_UNIT = ("subprocess", "socket", "multiprocessing", "tests.support.scripted_server",
               "tests.support.github_fake", "tests.support.git_repo",
               "tests.support.action_harness", "tests.support.local_http",
               "tests.support.prism", "tests.support.llama", "tests.support.browser")


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_every_test_module_lives_in_a_level_folder() -> None:
    misplaced = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")
                 if p.relative_to(TESTS).parts[0] not in LEVELS]
    assert misplaced == []


def test_unit_tests_start_no_process_server_or_repository() -> None:
    reaching = {str(p.relative_to(TESTS)): sorted(
                    name for name in imported_modules(p)
                    if name.startswith(NOT_IN_UNIT))
                for p in (TESTS / "unit").glob("test_*.py")}
    assert {module: names for module, names in reaching.items() if names} == {}


def test_unit_tests_ask_for_no_server_fixture() -> None:
    uses = [str(p.relative_to(TESTS)) for p in (TESTS / "unit").glob("test_*.py")
            if "scripted_server" in p.read_text(encoding="utf-8")]
    assert uses == []
