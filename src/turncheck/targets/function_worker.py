"""A `python` target in its own process: `python -m turncheck.targets.function_worker
package.module:function` serves the `command` target's JSON-lines protocol.

The action runs python targets this way so that the pull request's code runs with the
app's environment, not inside turncheck's process next to the GitHub token.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from turncheck.targets.base import Runtime, TargetError, Turn
from turncheck.targets.function_target import FunctionKind
from turncheck.targets.process import AppError

PROXY_URLS = {"openai_base_url": "OPENAI_BASE_URL", "anthropic_base_url": "ANTHROPIC_BASE_URL"}


def _turn_of(line: str) -> Turn:
    payload: dict[str, Any] = json.loads(line)
    return Turn(list(payload.get("messages") or []), str(payload.get("last_message") or ""),
                payload.get("session_id") or None, dict(payload.get("vars") or {}))


def _reply_line(loop: asyncio.AbstractEventLoop, kind: FunctionKind, turn: Turn) -> str:
    reply = loop.run_until_complete(kind.answer(turn))
    usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
    return json.dumps({"text": reply.text, "tool_calls": calls,
                       "usage": {k: v for k, v in usage.items() if v is not None},
                       "session_id": reply.session_id}, ensure_ascii=False, default=str)


def serve(reference: str) -> int:
    urls = {name: os.environ[var] for name, var in PROXY_URLS.items() if var in os.environ}
    kind = FunctionKind(reference)
    loop = asyncio.new_event_loop()  # one loop for every turn: the app may keep clients
    try:
        loop.run_until_complete(kind.start(Runtime(Path.cwd(), dict(os.environ), None, urls)))
    except AppError as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in sys.stdin:
        try:
            answer = _reply_line(loop, kind, _turn_of(line))
        except Exception as exc:  # the app's errors are the turn's, not the worker's end
            answer = json.dumps({"error": str(exc) if isinstance(exc, TargetError)
                                 else f"{type(exc).__name__}: {exc}"})
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
