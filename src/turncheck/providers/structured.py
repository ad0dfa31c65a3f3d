"""Structured answers: try the request forms a provider may accept, best first.

A judge or grader request carries an `AnswerSchema`. Each provider turns it into
one or more request bodies, from the most constrained (the schema enforced by the
provider) to today's prompt-and-parse, and `first_accepted` sends them in that
order: a body the provider rejects as a bad request (HTTP 400 or 422), or one a
cassette has no recording for, is followed by the next. Every call tries the
best form first, so a run does the same requests in the same order whether or
not it is replayed, and a cassette records only the form that was accepted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from turncheck.providers.base import ProviderError, RecordingMissing
from turncheck.providers.http import JsonObject

T = TypeVar("T")
REJECTED_STATUSES = frozenset({400, 422})
"""A bad request: the provider does not support the structured-output fields."""


def rejected(exc: ProviderError) -> bool:
    """Whether the next (less constrained) request form is worth trying after `exc`.

    llama-cpp-python's server answers an unsupported `response_format` with HTTP 500
    and its validation error, which names the field."""
    if isinstance(exc, RecordingMissing) or exc.status_code in REJECTED_STATUSES:
        return True
    return exc.status_code == 500 and "response_format" in exc.message


async def first_accepted(
    bodies: Sequence[JsonObject], send: Callable[[JsonObject], Awaitable[T]]
) -> T:
    """`send(body)` for the first body the provider accepts; the last one's error otherwise."""
    if not bodies:
        raise ValueError("no request body to send")
    *better, last = bodies
    for body in better:
        try:
            return await send(body)
        except ProviderError as exc:
            if not rejected(exc):
                raise
    return await send(last)
