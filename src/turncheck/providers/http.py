"""JSON POST with retries, shared by every provider.

Retried: HTTP 408, 429 and 5xx, timeouts, connection errors (refused, reset,
dropped without a response), a 2xx body that is not valid JSON, and a 2xx JSON
body that the caller's `usable` check rejects (no `choices`, say). Everything
else fails at once. Waits use exponential backoff with full jitter, or the
server's `Retry-After` (capped) when it sends one.

A malformed or unusable 2xx body is retried at most `malformed_json_retries` times
(default 1): it is usually a truncated or proxy-mangled response, which a second try
fixes, but the provider has probably billed the call already, and a body that
is never JSON (a base URL pointing at an HTML page) will not get better.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from turncheck.providers.base import (
    MIN_SECRET_LENGTH,
    RECORDED_LATENCY_HEADER,
    REPLAYED_EXTENSION,
    SECRET_PLACEHOLDER,
    USABILITY_EXTENSION,
    ProviderError,
)
from turncheck.providers.cassettes import Cassette
from turncheck.providers.json_limits import loads_bounded
from turncheck.providers.reply import Failure, Reply, timed_out
from turncheck.providers.secret_forms import FormRedactor
from turncheck.providers.secrets import SecretBinder
from turncheck.providers.urls import as_sent

if TYPE_CHECKING:
    import httpx

    from turncheck.providers.live_http import LiveSender

    Transport: TypeAlias = Cassette | httpx.AsyncBaseTransport
    """A cassette (replay needs no httpx), or any httpx transport (a recording cassette is
    a `CassetteTransport`; tests pass mock transports)."""

Sleep = Callable[[float], Awaitable[None]]
JsonObject = dict[str, Any]
Usability = Callable[[JsonObject], str | None]
"""What is wrong with a 2xx JSON answer (no usable completion in it), or None."""

EXCERPT_CHARS = 200
_TIMEOUT_PHASES = ("connect", "read", "write", "pool")
"""httpx's per-request timeouts (`httpx.Timeout(seconds).as_dict()`)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Attempts, backoff and timeouts (seconds) for one provider call."""

    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_cap: float = 20.0
    retry_after_cap: float = 60.0
    timeout: float = 60.0
    malformed_json_retries: int = 1

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.backoff_base, self.backoff_cap, self.retry_after_cap) < 0:
            raise ValueError("backoff and Retry-After limits must not be negative")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.malformed_json_retries < 0:
            raise ValueError("malformed_json_retries must not be negative")

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**(retry_number - 1))]."""
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** (retry_number - 1))
        return rng.uniform(0.0, ceiling)


@dataclass(frozen=True, slots=True)
class JsonResult:
    body: JsonObject
    latency_ms: float
    replayed: bool = False


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` value (delta seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        seconds = _seconds_until_http_date(text, now)
    if seconds is None or not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _seconds_until_http_date(text: str, now: datetime | None) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - (now or datetime.now(UTC))).total_seconds()


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """One line of at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_message_of(response: Reply) -> str:
    """The provider's error message (`{"error": {"message": ...}}`), else the body."""
    text = response.content.decode("utf-8", errors="replace")
    try:
        payload = loads_bounded(text)
    except ValueError:
        return text
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) else text


def _recorded_latency_ms(response: Reply) -> float | None:
    raw = response.headers.get(RECORDED_LATENCY_HEADER)
    if raw is None:  # a live answer: no exception raised and caught per turn
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


class JsonHttpClient:
    """One transport plus the retry loop; `post_json` is safe to call concurrently.

    A replaying cassette answers directly; anything else is sent by `LiveSender`
    (live_http.py), loaded with httpx only then. `redact` values (API keys, secret
    template values) are removed from error messages.
    """

    def __init__(
        self,
        provider_name: str,
        policy: RetryPolicy,
        transport: Transport | None = None,
        *,
        redact: Sequence[str] = (),
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
        max_in_flight: int = 64,
        binder: SecretBinder | None = None,
    ) -> None:
        self._provider_name = provider_name
        self._policy = policy
        # Every form of each secret (JSON-escaped too: an excerpt may be raw JSON).
        self._redact = FormRedactor(redact, SECRET_PLACEHOLDER, MIN_SECRET_LENGTH)
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        # Waiting for a free slot here, outside the attempt's timeout, keeps a
        # burst of requests from timing out in the connection pool's queue.
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._transport = transport
        self._timeouts = dict.fromkeys(_TIMEOUT_PHASES, policy.timeout)
        self._replaying = (
            transport if isinstance(transport, Cassette) and transport.mode == "replay" else None
        )
        self._urls: dict[str, str] = {}
        """Each URL in the form the cassette matches (`as_sent`), worked out once."""
        self._sender = None if self._replaying is not None else _live_sender(
            transport, max_in_flight, policy.timeout, binder)

    async def aclose(self) -> None:
        if self._sender is not None:
            await self._sender.aclose()
        if self._transport is not None:
            await self._transport.aclose()

    async def post_json(
        self,
        url: str,
        body: JsonObject,
        headers: Mapping[str, str],
        *,
        extensions: dict[str, Any] | None = None,
        usable: Usability | None = None,
    ) -> JsonResult:
        """POST `body`; a 2xx answer that `usable` rejects is retried like a malformed one."""
        try:
            content = json.dumps(body).encode()
        except RecursionError:
            raise ProviderError(f"{self._provider_name} request body nests too deeply") from None
        extensions = {**(extensions or {}), "timeout": self._timeouts}
        if usable is not None:
            extensions[USABILITY_EXTENSION] = usable
        failure: Failure | None = None
        malformed_count = 0
        attempt = 0
        while attempt < self._policy.max_attempts:
            attempt += 1
            async with self._in_flight:
                outcome = await self._attempt(url, content, headers, extensions)
            if isinstance(outcome, JsonResult) and usable is not None:
                outcome = _checked(outcome, usable)
            if isinstance(outcome, JsonResult):
                return outcome
            failure = outcome
            if not failure.retryable:
                raise self._error(url, failure.summary, failure)
            malformed_count += failure.malformed
            if malformed_count > self._policy.malformed_json_retries:
                break
            if attempt < self._policy.max_attempts:
                await self._sleep(self._delay(attempt, failure.retry_after))
        assert failure is not None
        plural = "attempt" if attempt == 1 else "attempts"
        raise self._error(url, f"{failure.summary} after {attempt} {plural}", failure)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._policy.retry_after_cap)
        return self._policy.backoff(attempt, self._rng)

    async def _attempt(
        self,
        url: str,
        content: bytes,
        headers: Mapping[str, str],
        extensions: dict[str, Any],
    ) -> JsonResult | Failure:
        started = time.perf_counter()
        try:
            # httpx's timeout bounds each read; this also bounds a slow trickle.
            async with asyncio.timeout(self._policy.timeout):
                response = await self._send(url, content, headers, extensions)
        except TimeoutError:
            return timed_out(self._policy.timeout)
        except ProviderError:
            raise  # a replay miss, a refused cassette, a missing key: not a failed send
        except Exception as exc:
            failure = _send_failure(exc, self._policy.timeout)
            if failure is None:
                raise
            return failure
        recorded = _recorded_latency_ms(response)
        measured = (time.perf_counter() - started) * 1000
        return _interpret(response, measured if recorded is None else recorded)

    async def _send(
        self, url: str, content: bytes, headers: Mapping[str, str], extensions: dict[str, Any]
    ) -> Reply:
        """The replaying cassette's answer, else what `LiveSender` gets; read in full."""
        if self._replaying is not None:
            sent = self._urls.get(url)
            if sent is None:
                sent = self._urls[url] = as_sent(url)
            usable = extensions.get(USABILITY_EXTENSION)
            return self._replaying.replay_reply("POST", sent, content, usable)
        assert self._sender is not None
        return await self._sender.post(url, content, headers, extensions)

    def _error(self, url: str, headline: str, failure: Failure) -> ProviderError:
        # Redact before shortening, so no secret is cut into a partial leak.
        detail = excerpt(self._redacted(failure.detail)) or "(empty body)"
        text = f"{self._provider_name} request to {url} failed: {headline}: {detail}"
        return ProviderError(self._redacted(text), status_code=failure.status_code)

    def unexpected(self, what: str) -> ProviderError:
        """A 2xx response the provider cannot use (wrong shape, an error object)."""
        text = f"unexpected response from {self._provider_name}: {self._redacted(what)}"
        return ProviderError(excerpt(text, 400))

    def _redacted(self, text: str) -> str:
        return self._redact.text(text)


def _checked(result: JsonResult, usable: Usability) -> JsonResult | Failure:
    problem = usable(result.body)
    if problem is None:
        return result
    return Failure("unusable answer in a 2xx response", problem, retryable=True,
                   malformed=True)


def _live_sender(
    transport: Transport | None, max_in_flight: int, timeout: float, binder: SecretBinder | None
) -> LiveSender:
    """The sender of calls that may reach the network: httpx (and aiohttp) load here."""
    from turncheck.providers.live_http import LiveSender

    return LiveSender(transport, max_in_flight, timeout, binder)


def _send_failure(exc: Exception, timeout: float) -> Failure | None:
    """`exc` as a failed attempt when it is one of httpx's exceptions (aiohttp's are raised
    as them), else None. httpx is loaded already whenever one was raised."""
    from turncheck.providers.live_http import failure_of

    return failure_of(exc, timeout)


def _interpret(response: Reply, latency_ms: float) -> JsonResult | Failure:
    status = response.status_code
    if 200 <= status < 300:
        return _parse_success(response, latency_ms)
    summary = f"HTTP {status}"
    detail = error_message_of(response) or response.reason_phrase
    if status in (408, 429) or status >= 500:
        retry_after = _retry_after_of(response)
        return Failure(summary, detail, True, status_code=status, retry_after=retry_after)
    return Failure(summary, detail, retryable=False, status_code=status)


def _retry_after_of(response: Reply) -> float | None:
    # OpenAI sends `retry-after-ms` alongside `retry-after`; it is more precise.
    milliseconds = parse_retry_after(response.headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    return parse_retry_after(response.headers.get("retry-after"))


def _parse_success(response: Reply, latency_ms: float) -> JsonResult | Failure:
    status = response.status_code
    try:
        payload = loads_bounded(response.content)
    except (ValueError, UnicodeDecodeError):
        return Failure(
            f"malformed JSON in HTTP {status} response",
            response.content.decode("utf-8", errors="replace"),
            retryable=True,
            status_code=status,
            malformed=True,
        )
    if not isinstance(payload, dict):
        detail = f"expected a JSON object, got {type(payload).__name__}"
        return Failure("unexpected response", detail, retryable=False, status_code=status)
    return JsonResult(payload, latency_ms, bool(response.extensions.get(REPLAYED_EXTENSION)))
