"""`command` targets: a process the app provides (any language), speaking JSON lines.

Started once per run, in the suite's folder, with the app's environment. For each turn
turncheck writes one line, `{"messages", "last_message", "session_id", "vars"}`, and reads
one line back: a JSON string, or `{text, tool_calls, usage, session_id}`. stdout carries
only replies (logs go to stderr). One turn is in flight at a time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from turncheck.providers.json_limits import loads_bounded
from turncheck.targets.base import (
    MAX_REPLY_BYTES,
    AppGone,
    AppReply,
    Runtime,
    TargetError,
    Turn,
    reply_of,
)
from turncheck.targets.process import AppProcess


class CommandKind:
    def __init__(self, command: str | Sequence[str], timeout_s: float) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.app: AppProcess | None = None

    async def start(self, runtime: Runtime) -> None:
        self.app = AppProcess(self.command, runtime.folder, runtime.env, runtime.port,
                              stdin=True)
        await self.app.start()

    async def stop(self) -> None:
        if self.app is not None:
            await self.app.stop()

    async def answer(self, turn: Turn) -> AppReply:
        assert self.app is not None and self.app.process is not None
        process = self.app.process
        assert process.stdin is not None and process.stdout is not None
        line = json.dumps(turn.context(), ensure_ascii=False).encode() + b"\n"
        try:
            process.stdin.write(line)
            await process.stdin.drain()
            raw = await asyncio.wait_for(process.stdout.readline(), self.timeout_s)
        except TimeoutError:
            raise TargetError(f"the app gave no reply line within {self.timeout_s:g}s"
                              ) from None
        except (ValueError, asyncio.LimitOverrunError):
            raise TargetError(f"the app's reply line is larger than {MAX_REPLY_BYTES:,} "
                              "bytes and was refused") from None
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise AppGone(f"the app closed its input: {exc}") from None
        if not raw.endswith(b"\n"):
            raise AppGone("the app closed its output without a reply")
        try:
            payload = loads_bounded(raw)
        except (ValueError, UnicodeDecodeError):
            raise TargetError(f"the app's reply line is not JSON: {raw[:200]!r}") from None
        return reply_of(payload)
