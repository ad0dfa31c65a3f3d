"""Cassette record/replay, in vcrpy's cassette format.

One cassette per suite, beside it: `math.eval.yaml` → `math.eval.cassette.yaml`
(see `cassette_path_for`); likewise one per sample file for its grader's calls.
The file is a vcrpy cassette (version 1), written and read with vcrpy's
serializer and its safe YAML loader, so vcrpy tools can read it.

Matching does not use vcrpy's patching or its linear matcher: interactions are
indexed by (method, full URL, body) where the body is canonical JSON
(`json.dumps(..., sort_keys=True, separators=(",", ":"))`, so key order does
not matter) or the raw bytes when it is not JSON. Lookups are O(1).

Samples: an eval repeated N times runs N independent conversations whose
requests may be byte-identical, so the key also holds the sample index (set by
the engine for the running task with `use_sample`). Sample i > 0 is stored as a
request header `x-turncheck-sample: i` (never sent to the provider); an
interaction without it is sample 0, so older cassettes replay as sample 0.
Record mode answers every sample it finds and records only the missing ones.

Repeats: when the cassette holds several responses for one key, identical
requests get them in recorded order and, once they run out, the last one again.
Record mode answers from the cassette whenever the key is present, so recording
never stores a second response for a request it has already seen; concurrent
identical misses are sent once. Only 2xx responses with a readable body (valid
JSON without a top-level `error`, and a usable completion by the provider's own
check, `USABILITY_EXTENSION`) are recorded: a 429/5xx or an answer without
`choices` would otherwise be replayed forever. A stored answer that the check
rejects is re-requested (and replaced) in record mode and refused in replay.

Pruning (`record --prune`): every interaction the run replays or records is marked
used, and the save of a finished run whose every request got a recordable answer
writes only those, so a re-recording after a prompt change drops the old answers.

Scrubbing happens before anything is stored or matched: the headers in
`DROPPED_HEADERS` are removed from requests and responses, and every secret
value is replaced by `SECRET_PLACEHOLDER` in URLs, header values and bodies.
Keys are computed on the scrubbed request, so a replay run whose prompt renders
an unavailable secret as `<SECRET>` still matches. Record mode returns exactly
what replay will return later (the scrubbed, decompressed response).

Replay needs no httpx: `Cassette` (this module) loads, matches, replays and saves, and
`JsonHttpClient` asks it for a `Reply` directly. Recording goes through its httpx transport
subclass, `CassetteTransport` (`cassette_transport.py`), which only record mode and httpx
clients load (a replayed run starts without httpx).

Cassettes from pull requests are untrusted: files over `max_bytes` (50 MiB),
nesting deeper than `MAX_YAML_DEPTH`, more than `MAX_YAML_ALIASES` aliases or
`MAX_INTERACTIONS` interactions are refused before or while parsing, and the
YAML is read with vcrpy's safe loader. A bad cassette sets `load_error`; every
request then fails with that message (a `CassetteFormatError`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, quote_plus

from turncheck.formats.files import FileRefused, read_bytes_bounded, write_text_confined
from turncheck.formats.templates import SECRET_TOKEN
from turncheck.gc_pause import gc_paused
from turncheck.providers.base import (
    MIN_SECRET_LENGTH,
    REPLAYED_EXTENSION,
    SECRET_PLACEHOLDER,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.cassette_reader import (
    CassetteShapeError,
    ReadLimits,
    iter_raw_interactions,
)
from turncheck.providers.cassette_yaml import (
    cassette_text,
    interaction_item,
    pyyaml_text,
    vcr_pair,
)
from turncheck.providers.json_limits import JsonTooDeep, loads_bounded
from turncheck.providers.record_lock import RecorderLock
from turncheck.providers.reply import Reply
from turncheck.providers.secret_forms import FormRedactor
from turncheck.providers.secrets import SecretBinder

CassetteMode = Literal["replay", "record"]
DEFAULT_MAX_CASSETTE_BYTES = 50 * 1024 * 1024
MAX_INTERACTIONS = 100_000
MAX_YAML_DEPTH = 64  # vcrpy cassettes nest about 6 deep; bodies are strings
MAX_YAML_ALIASES = 1_000
DROPPED_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "openai-organization", "cookie", "set-cookie"}
)
_LOADED_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})

Key = tuple[str, str, bytes, int]
"""(method, URL, SHA-256 of the body's match form, sample): a digest, not the body, so
the index of a large cassette costs 32 bytes per request, not a second copy of it."""
Headers = list[tuple[str, str]]
SAMPLE_HEADER = "x-turncheck-sample"
MAX_SAMPLE_INDEX = 10_000
_SAMPLE: ContextVar[int] = ContextVar("turncheck_sample", default=0)


def use_sample(index: int) -> None:
    """Key the provider calls of the current task (and tasks it starts) by sample `index`."""
    _SAMPLE.set(index)


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


def current_sample() -> int:
    return _SAMPLE.get()


def cassette_path_for(suite_path: Path) -> Path:
    """`dir/name.eval.yaml` → `dir/name.eval.cassette.yaml` (`.yml` likewise); a sample
    file's: `dir/name.samples.toml` → `dir/name.samples.cassette.yaml`."""
    name = suite_path.name
    for suffix in (".yaml", ".yml", ".toml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return suite_path.with_name(f"{name}.cassette.yaml")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


_REMEMBERED_TEXT_CHARS = 256
_REMEMBERED_TEXTS = 4096


class Scrubber:
    """Replaces secret values, in every form `secret_forms` lists, by `SECRET_PLACEHOLDER`;
    idempotent."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        self.secrets = sorted(unique, key=lambda s: (-len(s), s))
        self._secret_bytes = [secret.encode() for secret in self.secrets]
        self._texts: dict[str, str] = {}
        self._forms = FormRedactor(unique, SECRET_PLACEHOLDER, MIN_SECRET_LENGTH)
        # `forms` holds each form JSON-escaped as well: what canonical JSON shows.
        self._json_forms = self._forms.forms
        self._url_forms = sorted(
            {f for s in self._forms.forms for f in (s, quote(s, safe=""), quote_plus(s))},
            key=lambda f: (-len(f), f),
        )

    def text(self, value: str) -> str:
        if not self._forms:
            return value
        if len(value) > _REMEMBERED_TEXT_CHARS:
            return self._forms.text(value)
        scrubbed = self._texts.get(value)
        if scrubbed is None:  # header values repeat on every call: each is searched once
            if len(self._texts) >= _REMEMBERED_TEXTS:
                self._texts.clear()
            scrubbed = self._texts[value] = self._forms.text(value)
        return scrubbed

    def url(self, url: str) -> str:
        for form in self._url_forms:
            if form in url:
                url = url.replace(form, SECRET_PLACEHOLDER)
        return url

    def headers(self, headers: Iterable[tuple[str, str]]) -> Headers:
        return [
            (name, self.text(value))
            for name, value in headers
            if name.lower() not in DROPPED_HEADERS
        ]

    def body(self, raw: bytes) -> tuple[str | bytes, bytes]:
        """(the form used for matching, the scrubbed bytes to store)."""
        match, stored, _ = self.parsed_body(raw)
        return match, stored

    def parsed_body(self, raw: bytes) -> tuple[str | bytes, bytes, Any]:
        """`body`, and the JSON value `raw` holds (None when it is not JSON)."""
        try:
            parsed = loads_bounded(raw)
        except JsonTooDeep:
            raise
        except (ValueError, UnicodeDecodeError):
            scrubbed = self._raw_bytes(raw)
            return scrubbed, scrubbed, None
        canonical = canonical_json(parsed)
        if not self._forms.found_in_json(canonical):
            return canonical, raw, parsed
        cleaned = self._json_value(parsed)
        stored = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode()
        return canonical_json(cleaned), stored, parsed

    def answer_body(self, raw: bytes) -> bytes:
        """An answer's body as stored: `raw` itself when no form of a secret is in it.

        The forms are looked for in `raw` itself when its JSON escapes are those
        canonical JSON writes (no `\\u`, no `\\/`: every string then reads the same
        in both), which spares parsing and dumping each answer; otherwise as `body`."""
        if not self._forms:
            return raw
        if b"\\u" not in raw and b"\\/" not in raw:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return self._raw_bytes(raw)
            if not self._forms.found_in_json(text):
                return raw
        return self.body(raw)[1]

    def leaks_into_interaction(self, interaction: Interaction) -> bool:
        """`leaks_into(interaction.stored_parts())`, without walking nested lists."""
        if not self.secrets:
            return False
        strings = [interaction.uri, interaction.reason]
        for name, value in (*interaction.request_headers, *interaction.response_headers):
            strings += (name, value)
        bodies = (interaction.request_body, interaction.response_body)
        return any(secret in text for secret in self.secrets for text in strings) or any(
            secret in body for secret in self._secret_bytes for body in bodies)

    def leaks_into(self, value: object) -> bool:
        """Whether any string (or bytes) inside `value` still contains a secret."""
        if isinstance(value, str):
            return any(secret in value for secret in self.secrets)
        if isinstance(value, bytes):
            return any(secret.encode() in value for secret in self.secrets)
        if isinstance(value, dict):
            return any(self.leaks_into(k) or self.leaks_into(v) for k, v in value.items())
        if isinstance(value, list | tuple):
            return any(self.leaks_into(item) for item in value)
        return False

    def _raw_bytes(self, raw: bytes) -> bytes:
        for form in self._forms.forms:
            raw = raw.replace(form.encode(), SECRET_PLACEHOLDER.encode())
        return raw

    def _json_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._json_value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(k): self._json_value(v) for k, v in value.items()}
        return value


@dataclass(frozen=True, slots=True)
class Interaction:
    """One scrubbed request/response pair."""

    key: Key
    method: str
    uri: str
    request_body: bytes
    request_headers: Headers
    status: int
    reason: str
    response_headers: Headers
    response_body: bytes

    def to_reply(self) -> Reply:
        """As replayed: header names lower-cased (look-ups ignore case, as httpx's do)."""
        headers = {name.lower(): value for name, value in self.response_headers}
        return Reply(self.status, self.reason, headers, self.response_body,
                     {REPLAYED_EXTENSION: True})

    def stored_parts(self) -> list[object]:
        return [
            self.uri,
            self.request_body,
            self.request_headers,
            self.reason,
            self.response_headers,
            self.response_body,
        ]

    def to_vcr(self) -> tuple[Any, dict[str, Any]]:
        return vcr_pair(*self._yaml_parts())

    def yaml_item(self) -> str:
        """This interaction's text in the cassette file (`cassette_yaml`)."""
        return interaction_item(*self._yaml_parts())

    def _yaml_parts(self) -> tuple[str, str, bytes, Headers, int, str, Headers, bytes]:
        return (self.method, self.uri, self.request_body, self.request_headers,
                self.status, self.reason, self.response_headers, self.response_body)


class CassetteFormatError(ProviderError):
    """The cassette file cannot be used (too big, not YAML, not a vcrpy cassette)."""


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
        self._loaded_signature = _signature(self.path)
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
        match_body = _token_blind(match_body)
        key = (method.upper(), self._scrubber.url(url), _digest(match_body), current_sample())
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
        signature = _signature(self.path)
        if signature == self._loaded_signature:
            return
        self._loaded_signature = signature
        try:
            with gc_paused():
                for interaction in _read_cassette(self.path, self._max_bytes, self._scrubber,
                                                  self.shown):
                    key = interaction.key
                    if key not in self._index and key not in self._forgotten:
                        self._add(interaction)
                        self._used.add(id(interaction))
        except CassetteFormatError:
            return  # keep what this run has; its save rewrites the file whole
        self._stored_bytes = max(self._stored_bytes, _file_size(self.path))

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
        self._loaded_signature = _signature(self.path)
        self._stored_bytes = _file_size(self.path)
        try:
            with gc_paused():
                for interaction in _read_cassette(self.path, max_bytes, self._scrubber, self.shown):
                    self._add(interaction)
        except CassetteFormatError as exc:
            self.load_error = (f"{exc.message}; delete it and re-record with: "
                               f"{self.record_command}")


def _serialized(interactions: list[Interaction]) -> str:
    """The cassette as vcrpy's serializer writes it (what `cassette_text` reproduces)."""
    return pyyaml_text([interaction.to_vcr() for interaction in interactions])


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _digest(match_body: str | bytes) -> bytes:
    raw = match_body.encode("utf-8", "surrogatepass") if isinstance(match_body, str) \
        else match_body
    return hashlib.sha256(raw).digest()


def _token_blind(body: str | bytes) -> str | bytes:
    """The match form of a body: a `<SECRET:NAME>` token matches a recording made before
    secrets were bound late, which holds the scrubbed value `<SECRET>` in its place."""
    if isinstance(body, str) and "<SECRET:" in body:
        return SECRET_TOKEN.sub(SECRET_PLACEHOLDER, body)
    return body


def _model_of(body: str | bytes) -> str | None:
    if not isinstance(body, str):
        return None
    try:
        model = loads_bounded(body).get("model")
    except (ValueError, AttributeError):
        return None
    return model if isinstance(model, str) else None


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


def _read_cassette(path: Path, max_bytes: int, scrubber: Scrubber,
                   shown: str) -> Iterator[Interaction]:
    """Parse a cassette safely, one interaction at a time; every problem becomes a
    `CassetteFormatError` naming the cassette as `shown`."""
    data = _read_capped(path, max_bytes, shown)
    if data is None:
        return
    limits = ReadLimits(MAX_YAML_DEPTH, MAX_YAML_ALIASES, MAX_INTERACTIONS)
    number = 0
    try:
        for request, response in iter_raw_interactions(data, limits):
            number += 1
            yield _from_vcr(request, response, scrubber)
    except CassetteShapeError as exc:
        raise CassetteFormatError(
            f"cassette {shown} is not a valid vcrpy cassette: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        message = f"cassette {shown}: interaction {number} is malformed ({exc})"
        raise CassetteFormatError(message) from None


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


def _read_capped(path: Path, max_bytes: int, shown: str) -> bytes | None:
    try:
        data = read_bytes_bounded(path, limit=max_bytes)
    except FileNotFoundError:
        return None
    except FileRefused as exc:
        if exc.code == "file-too-large":
            raise CassetteFormatError(
                f"cassette {shown} is larger than the {max_bytes:,}-byte limit and was not loaded"
            ) from None
        raise CassetteFormatError(f"cannot read cassette {shown}: {exc.message}") from None
    except OSError as exc:
        raise CassetteFormatError(f"cannot read cassette {shown}: {exc.strerror}") from None
    try:
        data.decode("utf-8")  # libyaml would accept UTF-16 too; vcrpy writes UTF-8
    except UnicodeDecodeError:
        raise CassetteFormatError(f"cassette {shown} is not UTF-8 text") from None
    return data


def _from_vcr(request: dict[Any, Any], response: dict[Any, Any], scrubber: Scrubber) -> Interaction:
    """One interaction from the request and response mappings vcrpy stores."""
    method, uri = _require_str(request["method"], "method"), _require_str(request["uri"], "uri")
    body = _as_bytes(request.get("body"), "request body")
    request_headers = _request_headers(request.get("headers") or {})
    key = (method.upper(), scrubber.url(uri), _digest(_token_blind(scrubber.body(body)[0])),
           _sample_of(dict(request_headers)))
    status = response["status"]
    code = status["code"]
    if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
        raise ValueError(f"bad status code {code!r}")
    response_body = _as_bytes(response["body"]["string"], "response body")
    headers = [
        h
        for h in _response_headers(response["headers"])
        if h[0].lower() not in ("content-length", "transfer-encoding")
    ]
    return Interaction(
        key=key,
        method=method.upper(),
        uri=uri,
        request_body=body,
        request_headers=request_headers,
        status=code,
        reason=str(status.get("message") or ""),
        response_headers=[h for h in headers if h[0].lower() not in _LOADED_FRAMING_HEADERS],
        response_body=response_body,
    )


def _sample_of(headers: Any) -> int:
    """The sample index an interaction was recorded for (0 without the header)."""
    value = headers.get(SAMPLE_HEADER) if isinstance(headers, Mapping) else None
    if value is None:
        return 0
    if not isinstance(value, str) or not value.isdigit() or int(value) > MAX_SAMPLE_INDEX:
        raise ValueError(f"bad {SAMPLE_HEADER} header {value!r}")
    return int(value)


def _request_headers(raw: Any) -> Headers:
    """vcrpy keeps the first value of each request header."""
    if not isinstance(raw, dict):
        raise ValueError("request headers are not a mapping")
    headers: Headers = []
    for name, values in raw.items():
        value = values[0] if isinstance(values, list) and values else values
        headers.append((_require_str(name, "header name"), _require_str(value, "header")))
    return headers


def _response_headers(raw: Any) -> Headers:
    if not isinstance(raw, dict):
        raise ValueError("response headers are not a mapping")
    headers: Headers = []
    for name, values in raw.items():
        for value in values if isinstance(values, list) else [values]:
            headers.append((_require_str(name, "header name"), _require_str(value, "header")))
    return headers


def _require_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a string")
    return value


def _as_bytes(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise ValueError(f"{what} is not text")
