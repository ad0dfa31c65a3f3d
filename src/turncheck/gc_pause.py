"""Pausing Python's cyclic garbage collector around allocation-heavy work."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic collections off inside the block (unless they were off already).

    For work that allocates many long-lived objects freed by reference counting
    (parsing a cassette or a suite, a run that keeps every result): each automatic
    collection re-scans everything alive to find next to nothing to free.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
