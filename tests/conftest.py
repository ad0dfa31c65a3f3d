"""Shared pytest fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.scripted_server import ScriptedServer

# Never let an installed tiktoken fetch its encodings: token counts in tests are bounds.
os.environ.setdefault("TURNCHECK_TOKENIZER", "estimate")

pytest_plugins = ["tests.support.github_fake", "tests.support.prism", "tests.support.llama",
                  "tests.support.pr_fixtures", "tests.support.browser"]


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A scripted OpenAI/Anthropic-compatible server on 127.0.0.1 (support/scripted_server.py)."""
    with ScriptedServer() as server:
        yield server
