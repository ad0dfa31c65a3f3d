"""A `python` target in its own process: `python -m turncheck.targets.function_worker
package.module:function [--threads N]` serves the `command` target's JSON-lines protocol.

The action runs python targets this way so that the pull request's code runs with the
app's environment, not inside turncheck's process next to the GitHub token. Each line is
answered as it comes, without waiting for the earlier ones (a line with an `id` gets a
reply naming it, and its model calls carry the id: `concurrent`); a sync function runs
in a pool of N threads.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from turncheck.targets.base import Runtime, TargetError, Turn
from turncheck.targets.function_target import FunctionKind
from turncheck.targets.offline import refuse_network_in_process
from turncheck.targets.process import AppError

PROXY_URLS = {"openai_base_url": "OPENAI_BASE_URL", "anthropic_base_url": "ANTHROPIC_BASE_URL"}


def _turn_of(payload: dict[str, Any]) -> Turn:
    turn_id = payload.get("id")
    return Turn(list(payload.get("messages") or []), str(payload.get("last_message") or ""),
                payload.get("session_id") or None, dict(payload.get("vars") or {}),
                turn_id if isinstance(turn_id, str) else None)


async def _reply_line(kind: FunctionKind, line: str) -> str:
    turn_id: Any = None
    try:
        payload: dict[str, Any] = json.loads(line)
        turn_id = payload.get("id")
        reply = await kind.answer(_turn_of(payload))
    except Exception as exc:  # the app's errors are the turn's, not the worker's end
        answer: dict[str, Any] = {"error": str(exc) if isinstance(exc, TargetError)
                                  else f"{type(exc).__name__}: {exc}"}
    else:
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        answer = {"text": reply.text,
                  "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                 for c in reply.tool_calls],
                  "usage": {k: v for k, v in usage.items() if v is not None},
                  "session_id": reply.session_id}
    if turn_id is not None:
        answer["id"] = turn_id
    # ASCII: a lone surrogate in the function's text is escaped (turncheck replaces it
    # as in a model's answer); written as is, it would end the worker.
    return json.dumps(answer, ensure_ascii=True, default=str)


async def _answer_lines(kind: FunctionKind) -> None:
    """Every line of stdin answered on stdout, each as soon as it is ready."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    def read() -> None:  # stdin is read in a thread: the loop runs the turns meanwhile
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=read, daemon=True).start()
    running: set[asyncio.Task[None]] = set()
    while (line := await lines.get()) is not None:
        task = asyncio.create_task(_answer(kind, line))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)


async def _answer(kind: FunctionKind, line: str) -> None:
    sys.stdout.write(await _reply_line(kind, line) + "\n")
    sys.stdout.flush()


async def _serve(reference: str, threads: int, path: list[str], offline: bool) -> int:
    urls = {name: os.environ[var] for name, var in PROXY_URLS.items() if var in os.environ}
    if offline:  # this process is only the app: every thread of it stays on the machine
        refuse_network_in_process()
    kind = FunctionKind(reference, threads, path, offline)
    try:
        await kind.start(Runtime(Path.cwd(), dict(os.environ), None, urls))
    except AppError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        await _answer_lines(kind)
    finally:
        await kind.stop()
    return 0


def serve(reference: str, threads: int = 1, path: list[str] | None = None,
          offline: bool = False) -> int:
    # One loop for every turn: the app may keep clients.
    return asyncio.run(_serve(reference, threads, path or [], offline))


def _threads(argv: list[str]) -> int:
    if "--threads" in argv:
        return int(argv[argv.index("--threads") + 1])
    return 1


def _path(argv: list[str]) -> list[str]:
    """The target's `path:` folders, one `--path FOLDER` each."""
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "--path"]


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], _threads(sys.argv[2:]), _path(sys.argv[2:]),
                   "--offline" in sys.argv[2:]))
