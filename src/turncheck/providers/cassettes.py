"""Cassette record/replay: a cassette's interactions indexed by key, answered, recorded
and saved (the file itself: `cassette_file`; keys: `interactions`; secrets: `scrubber`).

Repeats: when the cassette holds several responses for one key, identical
requests get them in recorded order and, once they run out, the last one again.
Record mode answers from the cassette whenever the key is present, so recording
never stores a second response for a request it has already seen; concurrent
identical misses are sent once. Record mode answers every sample it finds and
records only the missing ones (samples: `call_context`). Only 2xx responses with a
readable body (valid JSON without a top-level `error`, and a usable completion by the
provider's own check, `USABILITY_EXTENSION`) are recorded: a 429/5xx or an answer
without `choices` would otherwise be replayed forever. A stored answer that the check
rejects is re-requested (and replaced) in record mode and refused in replay.

Pruning (`record --prune`): every interaction the run replays or records is marked
used, and the save of a finished run whose every request got a recordable answer
writes only those, so a re-recording after a prompt change drops the old answers.

Replay needs no httpx: `Cassette` (this module) loads, matches, replays and saves, and
`JsonHttpClient` asks it for a `Reply` directly. Recording goes through its httpx transport
subclass, `CassetteTransport` (`cassette_transport.py`), which only record mode and httpx
clients load (a replayed run starts without httpx).

A bad cassette sets `load_error`; every request then fails with that message (a
`CassetteFormatError`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from turncheck.formats.files import write_text_confined
from turncheck.gc_pause import gc_paused
from turncheck.providers.base import ProviderError, RecordingMissing
from turncheck.providers.call_context import current_sample
from turncheck.providers.cassette_file import (
    DEFAULT_MAX_CASSETTE_BYTES,
    MAX_INTERACTIONS,
    CassetteFormatError,
    file_signature,
    file_size,
    read_cassette,
)
from turncheck.providers.cassette_yaml import cassette_text
from turncheck.providers.interactions import Interaction, Key, body_digest, token_blind
from turncheck.providers.json_limits import JsonTooDeep, loads_bounded
from turncheck.providers.record_lock import RecorderLock
from turncheck.providers.reply import Reply
from turncheck.providers.scrubber import Scrubber
from turncheck.providers.secrets import SecretBinder

CassetteMode = Literal["replay", "record"]


class Cassette:
    """Answers requests from a cassette file; `CassetteTransport`, its httpx transport
    subclass, also records the misses (record mode).

    `live` mode does not use this class at all. One instance may be shared by
    several providers (clients): `aclose()` is therefore a no-op, and the owner
    calls `save()` and then `close()` once at the end. Use from one event loop.
    """

    def __init__(
        self,
        path: Path,
        mode: CassetteMode,
        secrets: Iterable[str] = (),
        suite_path: Path | str | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_CASSETTE_BYTES,
        record_command: str | None = None,
        binder: SecretBinder | None = None,
        prune: bool = False,
        shown_as: Path | str | None = None,
    ) -> None:
        if mode not in ("replay", "record"):
            raise ValueError(f"cassette mode must be 'replay' or 'record', not {mode!r}")
        self.path = Path(path)
        self.shown = str(shown_as) if shown_as is not None else str(self.path)
        """The cassette's path as messages name it: relative to the run's root, since
        they reach comments and reports read on another machine."""
        self.mode: CassetteMode = mode
        self.suite_path = str(suite_path) if suite_path is not None else "<suite path>"
        self.record_command = record_command or f"turncheck record {self.suite_path}"
        """What a miss suggests: with the options that shaped the requests."""
        self._binder = binder
        self._scrubber = Scrubber(secrets)
        self._interactions: list[Interaction] = []
        self._index: dict[Key, list[Interaction]] = {}
        self._cursor: dict[Key, int] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self._new_count = 0
        self._forgotten: set[Key] = set()
        self.prune = prune
        """`record --prune`: the save keeps only the interactions this run used."""
        self._used: set[int] = set()
        """Ids of the interactions this run replayed, recorded or took from another recorder."""
        self._unanswered: set[Key] = set()
        """Requests whose last attempt got no recordable answer (refused, failed): what the
        run would have used after them is unknown, so nothing is pruned."""
        self._max_bytes = max_bytes
        self._stored_bytes = 0
        """The size the saved file will have: what was loaded plus the YAML of each
        interaction recorded since (kept under `max_bytes`, what replay reads)."""
        self._yaml_items: dict[int, tuple[Interaction, str]] = {}
        """The YAML of each interaction recorded, by id: made once, when it is recorded
        (it is measured against the cap then), and written by `save` as it is."""
        self._recorder_lock = RecorderLock(self.path)
        self._claiming = asyncio.Lock()
        self._loaded_signature: tuple[int, int, int] | None = None
        self.load_error: str | None = None
        self._load(max_bytes)

    @property
    def recorded_count(self) -> int:
        """Interactions recorded by this run, not yet saved."""
        return self._new_count

    def __len__(self) -> int:
        return len(self._interactions)

    def request_bodies(self) -> Iterator[bytes]:
        """The stored request bodies, as recorded (secrets scrubbed)."""
        return (interaction.request_body for interaction in self._interactions)

    def replay_reply(self, method: str, url: str, body: bytes, usable: object,
                     any_base: bool = False) -> Reply:
        """Replay mode's answer as a `Reply`, without httpx's request and response objects
        (the replay path of `JsonHttpClient`); the same answer `CassetteTransport`'s
        `handle_async_request` gives. `any_base`: no upstream was named for this call, so
        the same request recorded against one other base URL (a gateway, a local server)
        answers it."""
        if self.load_error is not None:
            raise CassetteFormatError(self.load_error)
        key, _, match_body = self._key_of(method, url, body)
        if any_base and key not in self._index:
            elsewhere = self._recorded_elsewhere(key)
            if elsewhere is None:  # not recorded anywhere: the base URL is not why
                raise RecordingMissing(self._missing_message(key, match_body, False))
            key = elsewhere
        return self._replay(key, usable, match_body).to_reply()

    def _recorded_elsewhere(self, key: Key) -> Key | None:
        """`key` at the one other base URL the same request (same endpoint, body and
        sample) was recorded against; None when none or several."""
        method, url, *rest = key
        endpoint = url.removeprefix(_base_url(url))
        found = {i.key for i in self._interactions
                 if i.key[0] == method and list(i.key[2:]) == rest
                 and i.key[1].removeprefix(_base_url(i.key[1])) == endpoint}
        return found.pop() if len(found) == 1 else None

    def save(self, *, finished: bool = True) -> bool:
        """Write the cassette atomically if this run recorded anything; True if written.

        With `prune`, a `finished` run in which every call was answered also drops the
        interactions it did not use. Ends this recorder's hold on the cassette either way
        (`RecorderLock`)."""
        if self.prune and finished and not self._unanswered and self.load_error is None:
            self._drop_unused()
        if self._new_count == 0 or self.load_error is not None:
            self._recorder_lock.release()
            return False
        self._merge_saved()  # what another holder of the lock saved meanwhile is kept
        ordered = sorted(self._interactions,
                         key=lambda i: (i.method, i.uri, i.request_body, i.key[3]))
        if any(self._scrubber.leaks_into_interaction(i) for i in ordered):
            raise ProviderError(
                f"refusing to write {self.shown}: a secret value survived scrubbing "
                "(it appears outside a JSON string, for example inside a number)"
            )
        text = cassette_text(self._yaml_item(i) for i in ordered)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        if size > self._max_bytes:
            raise ProviderError(
                f"refusing to write {self.shown}: {size:,} bytes is over the "
                f"{self._max_bytes:,}-byte limit replay accepts"
            )
        write_text_confined(self.path, text)
        self._new_count = 0
        self._loaded_signature = file_signature(self.path)
        self._recorder_lock.release()  # the next miss, if any, takes it again
        return True

    async def aclose(self) -> None:
        """No-op: clients sharing this transport must not close it for each other."""

    async def close(self) -> None:
        self._recorder_lock.release()

    def _key_of(self, method: str, url: str, body: bytes) -> tuple[Key, bytes, str | bytes]:
        """(the key, the scrubbed body to store, the body's match form)."""
        try:
            match_body, stored_body = self._scrubber.body(body)
        except JsonTooDeep as exc:
            raise ProviderError(f"cannot send the request: its body's {exc}") from None
        match_body = token_blind(match_body)
        key = (method.upper(), self._scrubber.url(url), body_digest(match_body), current_sample())
        return key, stored_body, match_body

    def _replay(self, key: Key, usable: object, match_body: str | bytes) -> Interaction:
        hit = self._next(key)
        if hit is None:
            raise RecordingMissing(self._missing_message(key, match_body))
        problem = problem_of(hit.response_body, usable)
        if problem is not None:
            raise RecordingMissing(
                f"the recorded answer in {self.shown} is not usable ({problem}); re-record "
                f"it with: {self.record_command}"
            )
        return hit

    def _usable_hit(self, key: Key, usable: object) -> Interaction | None:
        hit = self._next(key)
        if hit is not None and problem_of(hit.response_body, usable) is not None:
            self._forget(key)  # an unusable recording heals by being re-requested
            hit = None
        return hit

    async def _claim(self) -> None:
        """Before this run's first paid call: wait until no other process records into
        this cassette, then take in what it saved."""
        if self._recorder_lock.held:
            return
        async with self._claiming:
            if not self._recorder_lock.held:
                await self._recorder_lock.acquire()
                self._merge_saved()

    def _merge_saved(self) -> None:
        """Add the recordings another run saved since this one loaded the file."""
        signature = file_signature(self.path)
        if signature == self._loaded_signature:
            return
        self._loaded_signature = signature
        try:
            with gc_paused():
                for interaction in read_cassette(self.path, self._max_bytes, self._scrubber,
                                                  self.shown):
                    key = interaction.key
                    if key not in self._index and key not in self._forgotten:
                        self._add(interaction)
                        self._used.add(id(interaction))
        except CassetteFormatError:
            return  # keep what this run has; its save rewrites the file whole
        self._stored_bytes = max(self._stored_bytes, file_size(self.path))

    def _drop_unused(self) -> None:
        """Forget every interaction this run did not use; the next save writes the rest."""
        self._merge_saved()  # another recorder's fresh answers count as used
        kept = [i for i in self._interactions if id(i) in self._used]
        dropped = len(self._interactions) - len(kept)
        if not dropped:
            return
        index: dict[Key, list[Interaction]] = {}
        for interaction in kept:
            index.setdefault(interaction.key, []).append(interaction)
        self._forgotten.update(self._index.keys() - index.keys())
        self._interactions, self._index, self._cursor = kept, index, {}
        self._new_count += dropped

    def _forget(self, key: Key) -> None:
        """Drop every recording for `key`; the next save rewrites the file without them."""
        self._forgotten.add(key)
        dropped = self._index.pop(key, [])
        self._cursor.pop(key, None)
        self._interactions = [i for i in self._interactions if i not in dropped]
        self._new_count += bool(dropped)

    def _next(self, key: Key) -> Interaction | None:
        entries = self._index.get(key)
        if not entries:
            return None
        position = self._cursor.get(key, 0)
        self._cursor[key] = position + 1
        hit = entries[min(position, len(entries) - 1)]
        self._used.add(id(hit))
        return hit

    def _missing_message(self, key: Key, body: str | bytes, other_base: bool = True) -> str:
        method, url, body_digest, sample = key
        digest = body_digest.hex()
        model = _model_of(body)
        what = f"model {model}, " if model else ""
        what += f"sample {sample}, " if sample else ""
        elsewhere = self._recorded_base_url(key) if other_base else None
        if elsewhere is not None:  # recorded against another upstream than the one named
            return (
                f"no recording for {method} {url} ({what}body sha256 {digest[:12]}) in "
                f"{self.shown}, whose recordings were made against {elsewhere}: replay with "
                f"{_naming_upstream(url, elsewhere)} (or record it with: "
                f"{self.record_command})"
            )
        return (
            f"no recording for {method} {url} ({what}body sha256 {digest[:12]}) in "
            f"{self.shown}; record it with: {self.record_command}"
        )

    def _recorded_base_url(self, key: Key) -> str | None:
        """The base URL this request was recorded against, when not `key`'s URL: the
        same request elsewhere, else the cassette's only other endpoint base."""
        method, url, *rest = key
        same = [i.uri for i in self._interactions
                if i.key[0] == method and list(i.key[2:]) == rest and i.uri != url]
        bases = {_base_url(uri) for uri in same} or {
            _base_url(i.uri) for i in self._interactions if i.key[0] == method}
        bases.discard(_base_url(url))
        return bases.pop() if len(bases) == 1 else None

    def _keep(self, interaction: Interaction) -> None:
        """Record `interaction` unless the cassette would then be one replay refuses."""
        if len(self._interactions) >= MAX_INTERACTIONS:
            raise ProviderError(
                f"not recorded: {self.shown} already holds {MAX_INTERACTIONS:,} interactions, "
                "the most a cassette may hold; split the suite"
            )
        item = interaction.yaml_item()
        size = len(item) if item.isascii() else len(item.encode("utf-8"))
        if self._stored_bytes + size > self._max_bytes:
            raise ProviderError(
                f"not recorded: this answer would make {self.shown} larger than the "
                f"{self._max_bytes:,}-byte limit replay accepts (about "
                f"{self._stored_bytes + size:,} bytes); split the suite or shorten the answers"
            )
        self._stored_bytes += size
        self._yaml_items[id(interaction)] = (interaction, item)
        self._remember_new(interaction)

    def _yaml_item(self, interaction: Interaction) -> str:
        made = self._yaml_items.get(id(interaction))
        return made[1] if made is not None and made[0] is interaction else \
            interaction.yaml_item()

    def _remember_new(self, interaction: Interaction) -> None:
        self._add(interaction)
        self._used.add(id(interaction))
        self._new_count += 1

    def _add(self, interaction: Interaction) -> None:
        self._interactions.append(interaction)
        self._index.setdefault(interaction.key, []).append(interaction)

    def _load(self, max_bytes: int) -> None:
        self._loaded_signature = file_signature(self.path)
        self._stored_bytes = file_size(self.path)
        try:
            with gc_paused():
                for interaction in read_cassette(self.path, max_bytes, self._scrubber, self.shown):
                    self._add(interaction)
        except CassetteFormatError as exc:
            self.load_error = (f"{exc.message}; delete it and re-record with: "
                               f"{self.record_command}")


def problem_of(body: bytes, usable: object) -> str | None:
    """What the provider's usability check finds wrong with a JSON answer body, or None."""
    if not callable(usable):
        return None
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return "not JSON"
    if not isinstance(payload, dict):
        return "not a JSON object"
    problem = usable(payload)
    return problem if isinstance(problem, str) else None


def _model_of(body: str | bytes) -> str | None:
    if not isinstance(body, str):
        return None
    try:
        model = loads_bounded(body).get("model")
    except (ValueError, AttributeError):
        return None
    return model if isinstance(model, str) else None


ENDPOINTS = ("/chat/completions", "/embeddings", "/messages")
"""Paths providers append to a base URL (OpenAI-compatible, Anthropic)."""


def _naming_upstream(url: str, base: str) -> str:
    """How a replay names the upstream `base`: Anthropic's is its SDK's environment
    variable (host only; a suite cannot set it), OpenAI's the `--base-url` option."""
    if url.split("?", 1)[0].endswith("/messages"):
        return f"ANTHROPIC_BASE_URL={base.removesuffix('/v1')} in turncheck's environment"
    return f"--base-url {base}"


def _base_url(uri: str) -> str:
    """`http://host:8080/v1` of `http://host:8080/v1/chat/completions`."""
    without_query = uri.split("?", 1)[0]
    for endpoint in ENDPOINTS:
        if without_query.endswith(endpoint):
            return without_query.removesuffix(endpoint)
    return without_query
