"""`command` targets: a process the app provides (any language), speaking JSON lines.

Started once per run, in the suite's folder, with the app's environment. For each turn
turncheck writes one line, `{"messages", "last_message", "session_id", "vars"}`, and reads
one line back: a JSON string, or `{text, tool_calls, usage, session_id}`. stdout carries
only replies (logs go to stderr).

By default one turn is in flight at a time and the reply is the next line. With
`concurrent: true` each line also carries `"id"`, several lines are written without
waiting, and each reply names the `id` it answers (in any order); the app sends that id
as `X-Turncheck-Turn` on the model calls it makes for the turn (docs/targets.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

from turncheck.providers.common import well_formed
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

logger = logging.getLogger(__name__)


class CommandKind:
    def __init__(self, command: str | Sequence[str], timeout_s: float,
                 concurrent: bool = False) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.concurrent = concurrent
        self.app: AppProcess | None = None
        self._pending: dict[str, asyncio.Future[Any]] = {}
        """Concurrent turns waiting for their reply line, by id."""
        self._reader: asyncio.Task[None] | None = None
        self._closed: TargetError | None = None
        """Why no reply can come any more (the app closed its output)."""
        self._writing = asyncio.Lock()
        self._line_numbers = itertools.count(1)
        self._owed: deque[str] = deque()
        """Lines whose turn timed out before their reply came, oldest first."""

    async def start(self, runtime: Runtime) -> None:
        self.app = AppProcess(self.command, runtime.folder, runtime.env, runtime.port,
                              stdin=True)
        await self.app.start()
        if self.concurrent:
            self._reader = asyncio.create_task(self._read_replies())

    async def stop(self) -> None:
        if self.app is not None:
            await self.app.stop()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def answer(self, turn: Turn) -> AppReply:
        if self.concurrent:
            return await self._answer_concurrently(turn)
        line_id = f"line {next(self._line_numbers)}"
        await self._write(turn.context())
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while self._late_reply(raw := await self._reply_line(line_id, deadline)):
            pass
        try:
            payload = loads_bounded(raw)
        except (ValueError, UnicodeDecodeError):
            raise TargetError(f"the app's reply line is not JSON: {raw[:200]!r}") from None
        return reply_of(payload)

    async def _reply_line(self, line_id: str, deadline: float) -> bytes:
        """The next line the app writes, before `deadline`; a line that does not come in
        time is owed, and dropped when it comes (`_late_reply`)."""
        stdout = self._process().stdout
        assert stdout is not None
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            raw = await asyncio.wait_for(stdout.readline(), max(remaining, 0.0))
        except TimeoutError:
            self._owed.append(line_id)
            raise self._late() from None
        except (ValueError, asyncio.LimitOverrunError):
            raise TargetError(f"the app's reply line is larger than {MAX_REPLY_BYTES:,} "
                              "bytes and was refused") from None
        if not raw.endswith(b"\n"):
            raise AppGone("the app closed its output without a reply")
        return raw

    def _late_reply(self, raw: bytes) -> bool:
        """Whether a reply line answers an earlier line whose turn timed out: while
        replies are owed, the next line is the oldest owed one's (one turn at a time, an
        app answers in order). It is dropped, and said so; never another turn's reply."""
        if not self._owed:
            return False
        answered = self._owed.popleft()
        logger.warning("turncheck: dropped the command app's late reply to %s (its turn "
                       "had timed out after %gs): %r", answered, self.timeout_s, raw[:120])
        return True

    def _process(self) -> asyncio.subprocess.Process:
        assert self.app is not None and self.app.process is not None
        return self.app.process

    def _late(self) -> TargetError:
        return TargetError(f"the app gave no reply line within {self.timeout_s:g}s (a reply "
                           "that comes later is dropped, never read as another turn's)")

    async def _write(self, line: dict[str, Any]) -> None:
        stdin = self._process().stdin
        assert stdin is not None
        data = well_formed(json.dumps(line, ensure_ascii=False)).encode() + b"\n"
        try:
            async with self._writing:  # whole lines, in the order they were sent
                stdin.write(data)
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise AppGone(f"the app closed its input: {exc}") from None

    async def _answer_concurrently(self, turn: Turn) -> AppReply:
        assert turn.turn_id is not None
        if self._closed is not None:
            raise self._closed
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[turn.turn_id] = waiting
        try:
            await self._write({**turn.context(), "id": turn.turn_id})
            payload = await asyncio.wait_for(waiting, self.timeout_s)
        except TimeoutError:
            raise self._late() from None
        finally:
            self._pending.pop(turn.turn_id, None)
        return reply_of(payload)

    async def _read_replies(self) -> None:
        """Hand each reply line to the turn its `id` names, until the app's output ends."""
        stdout = self._process().stdout
        assert stdout is not None
        while True:
            try:
                raw = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self._fail_pending(TargetError(
                    f"the app wrote a reply line larger than {MAX_REPLY_BYTES:,} bytes; it "
                    "was refused, and every turn waiting for a reply with it"))
                continue
            if not raw.endswith(b"\n"):
                self._closed = AppGone("the app closed its output without a reply")
                self._fail_pending(self._closed)
                return
            self._dispatch(raw)

    def _dispatch(self, raw: bytes) -> None:
        try:
            payload = loads_bounded(raw)
        except (ValueError, UnicodeDecodeError):
            payload = None
        turn_id = payload.get("id") if isinstance(payload, dict) else None
        if not isinstance(turn_id, str):
            self._fail_pending(TargetError(
                f"the app's reply line names no turn: {raw[:200]!r} (with concurrent: true "
                'each reply is a JSON object with the "id" of the line it answers)'))
            return
        waiting = self._pending.get(turn_id)
        if waiting is not None and not waiting.done():
            waiting.set_result(payload)
        else:  # a turn that timed out, or an id never sent
            logger.warning("turncheck: dropped the command app's reply to %s, which no "
                           "turn waits for (timed out?): %r", turn_id[:40], raw[:120])

    def _fail_pending(self, error: TargetError) -> None:
        for waiting in self._pending.values():
            if not waiting.done():
                waiting.set_exception(error)
