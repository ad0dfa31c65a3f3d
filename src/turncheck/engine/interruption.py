"""SIGINT and SIGTERM stop a run gracefully and keep everything it finished.

`interruptible()` (around a command's run) replaces the default handlers. On the
first signal no new eval, case or sample starts; those in flight get
`GRACE_SECONDS` to finish and are then cancelled (a second signal cancels them at
once). Every unfinished item ends with status `error`, reason `interrupted`; the
sessions close as usual, so each cassette is saved (atomically) with every
recording that completed, and the command writes its partial report, prints one
line and exits with 128 + the signal number (130 for SIGINT, 143 for SIGTERM).

Every other phase of a command (loading, comparing, rendering, posting: whatever
runs while no event loop does) is abandoned where it stands: inside `phases()`
the signal handler raises `PhaseInterrupted` at the next bytecode, and the command
keeps what it finished. Only writing the report itself (`keeping()`) is let finish;
`checkpoint()` after it starts nothing more once a stop was requested.

Work is guarded item by item with `STOP.guard(...)`; without `interruptible()`
(a library call, a test) `guard` simply awaits the work.

CPU-bound work (a check over a huge answer, a template at its limits) would keep
the event loop from ever seeing the stop request. So after a signal a watchdog
thread pings the loop; when the loop has not answered within `BUSY_SECONDS`, the
watchdog re-delivers the signal to the main thread (`_thread.interrupt_main`),
whose handler raises `CancelledError` inside the busy step if it belongs to guarded
work: that item ends `interrupted` like one cancelled after the grace period, and
everything else (closing sessions, saving cassettes, the partial report) proceeds.
Work inside the loop but outside a guarded item (closing sessions, saving cassettes)
is never cancelled this way.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import contextvars
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TypeVar

Result = TypeVar("Result")
GRACE_SECONDS = 0.5
"""Calls in flight may finish within this long after the signal (their recordings are kept)."""
BUSY_SECONDS = 0.25
"""After a stop request, a guarded step that keeps the event loop this long is cancelled."""
INTERRUPTED = "interrupted"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_GUARDED: contextvars.ContextVar[bool] = contextvars.ContextVar("guarded", default=False)
"""True inside guarded work and every task it starts (tasks copy the context)."""


class PhaseInterrupted(BaseException):
    """A signal ended a phase that is abandoned rather than finished (loading, comparing,
    rendering, posting). A BaseException, so no `except Exception` swallows it."""


class Interruption:
    """The process-wide stop request (signals are process-wide too)."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.installed = False
        self.abandoning = False
        """Inside `phases()`: a signal outside the event loop ends the phase."""
        self.keeping_depth = 0
        """Inside `keeping()`: the report is being written and is let finish."""
        self.cut_short_depth = 0
        """Inside `cut_short()`: abandoned even within `keeping()` (loading files)."""
        self.grace = GRACE_SECONDS
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._cancel_now: asyncio.Event | None = None
        self._watchdog: _Watchdog | None = None

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
        if self._watchdog is not None:
            self._watchdog.start_watching()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        event = self._stopping if first else self._cancel_now
        if event is not None:
            loop.call_soon_threadsafe(event.set)

    def handle(self, signum: int) -> None:
        """The signal handler: a stop request, or the watchdog's poke at a busy loop."""
        if self._watchdog is not None and self._watchdog.take_poke():
            _cancel_busy_guarded_work(self.message())
            return
        self.request(signum)
        if self.abandoning and (self.cut_short_depth or not self.keeping_depth) \
                and not _loop_running():
            raise PhaseInterrupted(self.message())

    @contextlib.contextmanager
    def phases(self) -> Iterator[None]:
        """Around a command: its phases outside the event loop may be abandoned."""
        self.abandoning = True
        try:
            yield
        finally:
            self.abandoning = False

    @contextlib.contextmanager
    def keeping(self) -> Iterator[None]:
        """Writing what the command finished (its report): a signal lets it finish."""
        self.keeping_depth += 1
        try:
            yield
        finally:
            self.keeping_depth -= 1

    def cut_short(self, work: Callable[[], object]) -> None:
        """`work()`, ended where it stands by a signal (or not started after one); what
        it stored before stays. For loading files, even while a report is kept."""
        try:
            if self.abandoning and self.requested:
                return
            self.cut_short_depth += 1
            try:
                work()
            finally:
                self.cut_short_depth -= 1
        except PhaseInterrupted:
            return

    def checkpoint(self) -> None:
        """After a stop request nothing new starts: raise PhaseInterrupted."""
        if self.abandoning and self.requested and not self.keeping_depth:
            raise PhaseInterrupted(self.message())

    def running_loop(self) -> asyncio.AbstractEventLoop | None:
        loop = self._loop
        return loop if loop is not None and loop.is_running() else None

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
        guarded = contextvars.copy_context()
        guarded.run(_GUARDED.set, True)
        task = asyncio.get_running_loop().create_task(_awaited(work), context=guarded)
        try:
            if await _first(task, stopping.wait()):
                return _outcome(task, interrupted)
            if await _first(task, _sleep_or(cancel_now, self.grace)):
                return _outcome(task, interrupted)  # finished within the grace period
        except asyncio.CancelledError:
            task.cancel()
            raise
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return interrupted()


def _loop_running() -> bool:
    """Whether an event loop runs in this (the main) thread: the run itself, which
    stops gracefully rather than where it stands."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _awaited(work: Callable[[], Awaitable[Result]]) -> Result:
    return await work()


def _outcome(task: asyncio.Future[Result], interrupted: Callable[[], Result]) -> Result:
    """The task's result, or `interrupted()` when the watchdog cancelled it mid-step."""
    return interrupted() if task.cancelled() else task.result()


def _cancel_busy_guarded_work(reason: str) -> None:
    """Raise CancelledError into the running step when it belongs to guarded work.

    Runs in the signal handler, so it raises at whatever bytecode the main thread was
    executing: only a guarded task (or one it started) may be ended this way."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop: the busy code is not a task step
        return
    if task is not None and _GUARDED.get():
        raise asyncio.CancelledError(reason)


class _Watchdog:
    """After a stop request, pokes the main thread whenever the event loop stays busy."""

    def __init__(self, stop: Interruption) -> None:
        self.stop = stop
        self.closed = threading.Event()
        self._poked = threading.Event()
        self._thread: threading.Thread | None = None

    def start_watching(self) -> None:
        if self._thread is None and not self.closed.is_set():
            self._thread = threading.Thread(target=self._watch, name="turncheck-watchdog",
                                            daemon=True)
            self._thread.start()

    def take_poke(self) -> bool:
        """Whether the signal being handled is our poke (and forget it)."""
        poked = self._poked.is_set()
        self._poked.clear()
        return poked

    def close(self) -> None:
        self.closed.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        while not self.closed.is_set():
            loop = self.stop.running_loop()
            beat = threading.Event()
            if loop is None or not _ping(loop, beat):
                self.closed.wait(0.05)
                continue
            if beat.wait(BUSY_SECONDS) or self.closed.is_set():
                self.closed.wait(0.05)
                continue
            self._poked.set()
            _thread.interrupt_main(signal.Signals(self.stop.signal or signal.SIGTERM))
            while not (beat.wait(0.05) or self.closed.is_set() or not self._poked.is_set()):
                pass  # wait until the poke was handled (or the loop answered)


def _ping(loop: asyncio.AbstractEventLoop, beat: threading.Event) -> bool:
    try:
        loop.call_soon_threadsafe(beat.set)
    except RuntimeError:  # closed meanwhile
        return False
    return True


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
        STOP.handle(signum)

    STOP.signal, STOP.installed = None, True
    STOP.keeping_depth = STOP.cut_short_depth = 0
    watchdog = STOP._watchdog = _Watchdog(STOP)
    for sig in _SIGNALS:
        signal.signal(sig, handler)
    try:
        yield STOP
    finally:
        watchdog.close()  # before the old handlers return: no poke may reach them
        for sig, old in previous.items():
            signal.signal(sig, old)
        STOP.installed, STOP._watchdog = False, None


def report_interruption() -> int:
    """Print the one line an interrupted command prints; its exit code."""
    print(f"turncheck: {STOP.message()}; the partial report and every completed recording "
          "were kept", file=sys.stderr)
    return STOP.exit_code
