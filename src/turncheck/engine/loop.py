"""Running the engine's coroutines from synchronous code."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

from turncheck.gc_pause import gc_paused

T = TypeVar("T")
YOUNG_COLLECTION_INTERVAL_S = 1.0


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)`, without formatting its result and with a lighter GC.

    On exit, `asyncio.run` restores the SIGINT handler and `signal.signal` formats
    the old one, a `functools.partial` holding the main task, whose repr includes
    the task's result: the whole run report, every turn of every eval (about 8% of
    a 5,000-eval run's CPU). The main task here returns None instead.

    While it runs, the cyclic garbage collector only looks at young objects, once a
    second. A run keeps every result it builds (and the suites it runs), so the heap
    only grows, and each automatic full collection re-scanned all of it: about a fifth
    of the CPU of a 5,000-eval run, to free next to nothing (a run makes little cyclic
    garbage, and what it makes is young). Full collections resume afterwards.
    """
    results: list[T] = []

    async def main() -> None:
        collector = asyncio.create_task(_collect_young_objects())
        try:
            results.append(await coroutine)
        finally:
            collector.cancel()

    with gc_paused():
        asyncio.run(main())
    return results[0]


async def _collect_young_objects() -> None:
    while True:
        await asyncio.sleep(YOUNG_COLLECTION_INTERVAL_S)
        gc.collect(1)
