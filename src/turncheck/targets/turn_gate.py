"""Which of an app's turns may be open at once (docs/targets.md, "Concurrent turns").

Concurrently, a turn waits only while a turn whose conversation said the same so far
(its user messages: two repeats of one eval, say) is open: the proxy could not tell their
calls apart (`attribution.py`). The target's first turn goes alone (the probe): a
call of the app's that carries none of the turn's messages shows there, with one turn
open and so still counted exactly, and turns go one at a time from the start. One at a
time (`serial`): a turn waits until no other is open.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class TurnGate:
    def __init__(self, concurrent: bool) -> None:
        self.serial = not concurrent
        """One turn at a time: set from the start, or when a call could not be attributed."""
        self._probing = concurrent
        self._open: set[tuple[str, ...]] = set()
        """The user messages of each open turn."""
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def turn(self, history: tuple[str, ...]) -> AsyncIterator[None]:
        """Open a turn whose user messages are `history` once it may be, until the block
        ends."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._may_open(history))
            self._open.add(history)
        try:
            yield
        finally:
            async with self._changed:
                self._open.discard(history)
                self._probing = False
                self._changed.notify_all()

    def _may_open(self, history: tuple[str, ...]) -> bool:
        if not self._open:
            return True
        return not (self.serial or self._probing) and history not in self._open
