"""What one attempt of a request gives the retry loop (`JsonHttpClient`): a `Reply` read
in full, or a `Failure`. Free of httpx and aiohttp, so that a replay loads neither."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True, slots=True)
class Reply:
    """A response, read in full: all that the retry loop and the providers look at.

    `headers` look-ups ignore case, as `httpx.Headers` does.
    """

    status_code: int
    reason_phrase: str
    headers: Mapping[str, str]
    content: bytes
    extensions: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, response: httpx.Response) -> Reply:
        """An httpx response (from a transport), already read."""
        return cls(
            response.status_code,
            response.reason_phrase,
            response.headers,
            response.content,
            response.extensions,
        )


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt: why, and whether the retry loop tries again."""

    summary: str
    detail: str
    retryable: bool
    status_code: int | None = None
    retry_after: float | None = None
    malformed: bool = False


def timed_out(seconds: float) -> Failure:
    """An attempt that got no answer within its timeout (retried)."""
    return Failure("timed out", f"no response within {seconds:g}s per attempt", retryable=True)


def describe(exc: Exception) -> str:
    """`ExceptionName: message`, or the name alone when the message is empty."""
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
