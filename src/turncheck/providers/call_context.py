"""Which sample and which caller a provider call belongs to, for the running task.

An eval repeated N times runs N independent conversations whose requests may be
byte-identical, so a cassette keys each request by its sample index too (set by the
engine for the running task with `use_sample`). Sample i > 0 is stored as a request
header `x-turncheck-sample: i` (never sent to the provider); an interaction without it
is sample 0, so older cassettes replay as sample 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

SAMPLE_HEADER = "x-turncheck-sample"
MAX_SAMPLE_INDEX = 10_000
_SAMPLE: ContextVar[int] = ContextVar("turncheck_sample", default=0)


def use_sample(index: int) -> None:
    """Key the provider calls of the current task (and tasks it starts) by sample `index`."""
    _SAMPLE.set(index)


def current_sample() -> int:
    return _SAMPLE.get()


CALLER_HEADER = "x-turncheck-caller"
"""Stored on interactions made for someone other than the model under test (`simulator`:
a simulated user's model), so a reader of the cassette tells them apart; not matched on."""
_CALLER: ContextVar[str | None] = ContextVar("turncheck_caller", default=None)


@contextmanager
def calling_as(label: str) -> Iterator[None]:
    """Label the calls made inside the block (stored as `CALLER_HEADER`)."""
    token = _CALLER.set(label)
    try:
        yield
    finally:
        _CALLER.reset(token)


def current_caller() -> str | None:
    return _CALLER.get()
