"""SIGINT and SIGTERM stop a run gracefully and keep everything it finished.

`interruptible()` (around a command's run) replaces the default handlers. On the
first signal no new eval, case or sample starts; those in flight get
`GRACE_SECONDS` to finish and are then cancelled (a second signal cancels them at
once). Every unfinished item ends with status `error`, reason `interrupted`; the
sessions close as usual, so each cassette is saved (atomically) with every
recording that completed, and the command writes its partial report, prints one
line and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM).

Work is guarded item by item with `STOP.guard(...)`; without `interruptible()`
(a library call, a test) `guard` simply awaits the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TypeVar

Result = TypeVar("Result")
GRACE_SECONDS = 3.0
INTERRUPTED = "interrupted"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interruption:
    """The process-wide stop request (signals are process-wide too)."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.installed = False
        self.grace = GRACE_SECONDS
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._cancel_now: asyncio.Event | None = None

    @property
    def requested(self) -> bool:
        return self.signal is not None

    @property
    def exit_code(self) -> int:
        return 128 + (self.signal or 0)

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else "a signal"

    def message(self) -> str:
        return f"{INTERRUPTED} by {self.name} before it finished"

    def request(self, signum: int) -> None:
        """Called from the signal handler (the main thread, between bytecodes)."""
        first = self.signal is None
        self.signal = self.signal or signum
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        event = self._stopping if first else self._cancel_now
        if event is not None:
            loop.call_soon_threadsafe(event.set)

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._stopping is None or self._cancel_now is None:
            self._loop, self._stopping, self._cancel_now = loop, asyncio.Event(), asyncio.Event()
            if self.requested:
                self._stopping.set()
        return self._stopping, self._cancel_now

    async def guard(self, work: Callable[[], Awaitable[Result]],
                    interrupted: Callable[[], Result]) -> Result:
        """`work()`, or `interrupted()` when a stop request ends it (or came before it)."""
        if not self.installed:
            return await work()
        stopping, cancel_now = self._events()
        if self.requested:
            return interrupted()
        task = asyncio.ensure_future(work())
        try:
            if await _first(task, stopping.wait()):
                return task.result()
            if await _first(task, _sleep_or(cancel_now, self.grace)):
                return task.result()  # finished within the grace period: a real result
        except asyncio.CancelledError:
            task.cancel()
            raise
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return interrupted()


async def _sleep_or(event: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)


async def _first(task: asyncio.Future[Result], other: Awaitable[object]) -> bool:
    """Wait for `task` or `other`; True when `task` is done."""
    waiter: asyncio.Future[object] = asyncio.ensure_future(other)
    pending: set[asyncio.Future[object]] = {task, waiter}  # type: ignore[arg-type]
    try:
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    return task.done()


STOP = Interruption()


@contextlib.contextmanager
def interruptible() -> Iterator[Interruption]:
    """Handle SIGINT/SIGTERM gracefully inside the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield STOP
        return
    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        STOP.request(signum)

    STOP.signal, STOP.installed = None, True
    for sig in _SIGNALS:
        signal.signal(sig, handler)
    try:
        yield STOP
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        STOP.installed = False


def report_interruption() -> int:
    """Print the one line an interrupted command prints; its exit code."""
    print(f"turncheck: {STOP.message()}; the partial report and every completed recording "
          "were kept", file=sys.stderr)
    return STOP.exit_code
