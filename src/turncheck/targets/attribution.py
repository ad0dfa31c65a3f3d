"""Which open turn a model call belongs to, by what the call carries: the users' messages.

When several turns of an app are in flight and a call names none (no `X-Turncheck-Turn`
header), the proxy reads the user messages of the call (Chat Completions, Responses,
Anthropic Messages, embeddings' input) and looks there for each open turn's user
messages, whitespace collapsed and as whole words (a template around a message still
matches): newest first, each in an earlier message of the call than the one after it.
The turn with the most of its messages found (then the most characters) is the call's.
A call of turn T carries T's messages; another open turn U can match as many only when
U's messages are T's (their conversations said the same so far: the provider keeps such
turns from being open at once). A tie, or no turn found, cannot be decided
(docs/targets.md, "Concurrent turns").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from turncheck.providers.json_limits import loads_bounded


class Attributable(Protocol):
    @property
    def texts(self) -> tuple[str, ...]:
        """The turn's user messages, collapsed, oldest first (the newest last)."""
        ...


Turn = TypeVar("Turn", bound=Attributable)


def collapsed(text: str) -> str:
    return " ".join(text.split())


def user_history(messages: Sequence[str]) -> tuple[str, ...]:
    return tuple(collapsed(text) for text in messages)


def occurs(needle: str, haystack: str) -> bool:
    """`needle` in `haystack` as whole words: not inside a longer word at either end."""
    if not needle:
        return True
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if _boundary(haystack, start - 1, needle[0]) and _boundary(haystack, end, needle[-1]):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _boundary(text: str, index: int, edge: str) -> bool:
    """Whether the match's edge character `edge` is not glued to a word character next
    to it (at `index`)."""
    if index < 0 or index >= len(text) or not edge.isalnum():
        return True
    return not text[index].isalnum()


def call_messages(body: bytes) -> list[str] | None:
    """The user messages of a model call's JSON body, collapsed, in order; None when the
    body is not a JSON object."""
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict):
        return None
    found: list[str] = []
    for key in ("messages", "input", "prompt"):
        _user_strings(payload.get(key), found)
    return [collapsed(text) for text in found]


def _user_strings(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, list):
        for item in value:
            _user_strings(item, found)
    elif isinstance(value, dict) and value.get("role", "user") == "user":
        for key in ("content", "text"):
            _user_strings(value.get(key), found)


def owner(turns: Sequence[Turn], messages: Sequence[str]) -> Turn | None:
    """The turn whose call carries the user `messages`, or None when no single one can
    be told."""
    best: list[Turn] = []
    best_score = (0, 0)
    for turn in turns:
        found = _found(turn.texts, messages)
        if not found:
            continue
        score = (found, sum(len(text) for text in turn.texts[-found:]))
        if score > best_score:
            best, best_score = [turn], score
        elif score == best_score:
            best.append(turn)
    return best[0] if len(best) == 1 else None


def _found(texts: Sequence[str], messages: Sequence[str]) -> int:
    """How many of the turn's newest `texts` the call's `messages` hold, each in an
    earlier message than the text after it's."""
    position = len(messages)
    count = 0
    for text in reversed(texts):
        position = next((index for index in range(position - 1, -1, -1)
                         if occurs(text, messages[index])), -1)
        if position < 0:
            break
        count += 1
    return count
