"""Pull-request scenarios for the action tests: eval texts, the scripted model that
answers them, and a repository whose feature branch changes a recorded suite.

The `model` fixture is registered in tests/conftest.py (`pytest_plugins`); a test
module that needs more answers overrides it with `def model(model)`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.action_harness import record
from tests.support.git_repo import GitRepo
from tests.support.scripted_server import ScriptedServer

SUITE = "evals/math.eval.yaml"
# Passes on turn 1 ("The answer is 105."); reworded, it needs turn 2 ("It is 100." first).
TURN_EVALS = (
    "  - name: multiply\n"
    "    prompt: What is 15 * 7?\n"
    "    checks:\n"
    "      - match: '*105*'\n"
    "      - prompt: That is wrong. Recalculate 15 multiplied by 7.\n"
    "        checks: [{match: '*105*'}]\n"
)
REWORDED_TURN_EVALS = TURN_EVALS.replace("What is 15 * 7?", "What is fifteen times seven?")
PASSING_EVALS = (
    "  - name: add\n"
    "    prompt: What is 2 + 2?\n"
    "    checks: [{match: '*4*'}]\n"
)
FAILING_EVALS = (  # the model answers Lyon
    "  - name: capital\n"
    "    prompt: What is the capital of France?\n"
    "    checks: [{match: '*Paris*'}]\n"
)
# The pull request most tests make: the turn eval goes from turn 1 to turn 2.
BASE_EVALS = TURN_EVALS + PASSING_EVALS
HEAD_EVALS = REWORDED_TURN_EVALS + PASSING_EVALS


@pytest.fixture
def model(scripted_server: ScriptedServer) -> ScriptedServer:
    """The scripted server answering every prompt in the eval texts above."""
    scripted_server.add_rule("4", contains="2 + 2", usage=(12, 1))
    scripted_server.add_rule("Lyon.", contains="capital of France", usage=(15, 2))
    scripted_server.add_rule("The answer is 105.", contains="15 * 7", usage=(20, 6))
    scripted_server.add_rule("It is 100.", contains="fifteen times seven", usage=(22, 4))
    scripted_server.add_rule("Sorry: 105.", contains="Recalculate", usage=(40, 4))
    return scripted_server


def add_suite(repo: GitRepo, path: str, text: str) -> None:
    """Write a suite at `path` and record its cassette (not committed)."""
    repo.write(path, text)
    record(repo.path / path)


def commit_recorded(repo: GitRepo, path: str, text: str, message: str,
                    recorder: Callable[[Path], None] | None = record) -> str:
    """Write `path`, record its cassette with `recorder` (None: no cassette) and commit."""
    repo.write(path, text)
    if recorder is not None:
        recorder(repo.path / path)
    return repo.commit(message)


def feature_branch_repo(root: Path, base_text: str, head_text: str, *, path: str = SUITE,
                        recorder: Callable[[Path], None] | None = record,
                        record_head: bool = True) -> tuple[GitRepo, str, str]:
    """A repository at `root` whose `feature` branch changes `path` from `base_text` to
    `head_text`; returns it (checked out on `feature`) with the base and head commits."""
    repo = GitRepo(root)
    base = commit_recorded(repo, path, base_text, "base", recorder)
    repo.branch("feature", checkout=True)
    head = commit_recorded(repo, path, head_text, "head", recorder if record_head else None)
    return repo, base, head
