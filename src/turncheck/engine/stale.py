"""Which referenced file made a replayed request miss its recording.

A suite whose prompt comes from `prompts/support.md` sends that file's text in its
requests; when the file changes, replay finds no recording for exactly the turns
that carry the text. The missing-recording error then names the file: a file whose
text the request carries but no recorded request does has changed since recording.

A referenced file's text is a whole field (a prompt, a system prompt, a message), so a
request carries it when one of its messages is that text; texts are compared by hash,
so a suite of 200 evals each with its own 1 MiB prompt file costs one pass over what
was sent and recorded, not evals × files × megabytes of substring searches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from turncheck.formats.references import Reference
from turncheck.providers.base import ChatMessage
from turncheck.providers.json_limits import loads_bounded


class RecordedTexts:
    """The message contents of a cassette's recorded requests, read once on the first miss,
    kept as digests; and each referenced file's pieces' digests, computed once. Texts
    are compared by digest: 200 files with the same 1 MiB text would otherwise be
    compared byte by byte, each with each sent message, on every miss."""

    def __init__(self, bodies: Iterable[bytes]) -> None:
        self._bodies = bodies
        self._texts: set[bytes] | None = None
        self._changed: dict[str, bool] = {}
        self._pieces: dict[tuple[str, str], frozenset[bytes]] = {}
        """By path and content digest."""

    def texts(self) -> set[bytes]:
        """Each recorded message's text, stripped, as its digest."""
        if self._texts is None:
            self._texts = {text_digest(text) for body in self._bodies
                           for text in _message_texts(body)}
        return self._texts

    def pieces(self, reference: Reference) -> frozenset[bytes]:
        """The digests of the texts `reference` puts into requests."""
        key = (reference.path, reference.digest or "")
        found = self._pieces.get(key)
        if found is None:
            found = self._pieces[key] = frozenset(text_digest(t) for t in reference.texts)
        return found

    def lacks(self, reference: Reference) -> bool:
        """True when no recorded request carries any text of `reference`."""
        if reference.path not in self._changed:
            self._changed[reference.path] = self.pieces(reference).isdisjoint(self.texts())
        return self._changed[reference.path]


def text_digest(text: str) -> bytes:
    """A text compared by its digest: one pass over it, then 32 bytes per comparison."""
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).digest()


def _message_texts(body: bytes) -> list[str]:
    try:
        data = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return []
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        return []
    return [m["content"] for m in messages if isinstance(m, dict)
            and isinstance(m.get("content"), str)]


def stale_reference_hint(references: Sequence[Reference], sent: Sequence[ChatMessage],
                         recorded: RecordedTexts) -> str | None:
    """A note naming the referenced files behind a missing recording, or None."""
    carried = {text_digest(message.content) for message in sent}
    involved = [r for r in references if not recorded.pieces(r).isdisjoint(carried)]
    if not involved:
        return None
    changed = [r.path for r in involved if recorded.lacks(r)]
    if changed:
        return f"{', '.join(changed)} changed since the cassette was recorded"
    return f"the request carries text from {', '.join(r.path for r in involved)}"
