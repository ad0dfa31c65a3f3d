"""Helpers for the provider tests (tests/integration/test_providers.py and test_cassettes.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def run(make: Callable[[], Awaitable[T]]) -> T:
    """Await `make()` on a fresh event loop (so its clients are created inside it)."""
    async def wrapper() -> T:
        return await make()

    return asyncio.run(wrapper())
