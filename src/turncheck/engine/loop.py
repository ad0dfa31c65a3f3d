"""Running the engine's coroutines from synchronous code."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)`, without formatting its result.

    On exit, `asyncio.run` restores the SIGINT handler and `signal.signal` formats
    the old one, a `functools.partial` holding the main task, whose repr includes
    the task's result: the whole run report, every turn of every eval (about 8% of
    a 5,000-eval run's CPU). The main task here returns None instead.
    """
    results: list[T] = []

    async def main() -> None:
        results.append(await coroutine)

    asyncio.run(main())
    return results[0]
