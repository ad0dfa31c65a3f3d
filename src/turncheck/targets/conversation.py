"""What one conversation with an app carries from turn to turn: its session ids.

The engine begins a conversation per sample (`begin_conversation`); the target reads it
(`current_conversation`) on every turn. A context variable follows the sample's task, so
concurrent conversations each see their own.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turncheck.formats.target import Target


@dataclass
class Conversation:
    client_id: str
    """The id turncheck sends with `session: client`: derived from the eval and sample, so
    a replay sends what the recording sent."""
    app_id: str | None = None
    """The id the app handed out in a reply (`session: {from: ...}`)."""
    target: Target | None = None
    """The eval's own target, when it overrides the suite's."""


_CURRENT: ContextVar[Conversation | None] = ContextVar("turncheck_conversation", default=None)


def begin_conversation(identity: str, target: Target | None = None) -> Conversation:
    """Start a conversation for the current task; `identity` names it (suite, eval, sample)."""
    conversation = Conversation(hashlib.sha256(identity.encode()).hexdigest()[:24], None,
                                target)
    _CURRENT.set(conversation)
    return conversation


def current_conversation() -> Conversation:
    """The task's conversation; one is begun when the engine began none."""
    conversation = _CURRENT.get()
    if conversation is None:
        import uuid

        conversation = begin_conversation(uuid.uuid4().hex)
    return conversation
