"""Which open turn a model call of the app's is counted in, by the user messages it carries
(docs/targets.md, "Concurrent turns"): the right one, or none when it cannot be told."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from turncheck.targets.attribution import call_messages, owner, user_history


@dataclass(frozen=True)
class Turn:
    name: str
    texts: tuple[str, ...]


def _turn(name: str, *said: str) -> Turn:
    return Turn(name, user_history(said))


ADA_1 = _turn("ada-1 second turn", "My name is Ada (1).", "I live in Paris.")
ADA_2 = _turn("ada-2 second turn", "My name is Ada (2).", "I live in Paris.")
ADA_3 = _turn("ada-3 first turn", "My name is Ada (3).")
HI = _turn("hi", "Hi")
HI_THERE = _turn("hi there", "Hi there")


def _chat(*users: str) -> bytes:
    messages = [{"role": "system", "content": "You are the support bot. Hi there!"}]
    for text in users:
        messages += [{"role": "user", "content": text},
                     {"role": "assistant", "content": "Hi. I live in Paris."}]
    return json.dumps({"model": "m", "messages": messages[:-1]}).encode()


@pytest.mark.parametrize(("body", "turns", "expected"), [
    # A follow-up every conversation sends: told apart by the earlier messages.
    (_chat("My name is Ada (1).", "I live in Paris."), [ADA_1, ADA_2, ADA_3], ADA_1),
    (_chat("My name is Ada (2).", "I live in Paris."), [ADA_1, ADA_2, ADA_3], ADA_2),
    (_chat("My name is Ada (3)."), [ADA_1, ADA_2, ADA_3], ADA_3),
    # A template around the user's words, spaces changed.
    (_chat("Customer wrote:\n  My name is   Ada (3).\nAnswer kindly."), [ADA_1, ADA_3], ADA_3),
    # "Hi" is in "Hi there": the longer message that the call holds wins.
    (_chat("Hi there"), [HI, HI_THERE], HI_THERE),
    (_chat("Hi"), [HI, HI_THERE], HI),
    # Whole words only: "Hi" is not in "This".
    (_chat("This"), [HI], None),
    # An app that sends only the newest message: two turns said it, no telling.
    (_chat("I live in Paris."), [ADA_1, ADA_2], None),
    # A rewritten message: no turn's.
    (_chat("Paris in live I"), [ADA_1, ADA_3], None),
])
def test_a_call_is_the_turn_whose_messages_it_carries(
        body: bytes, turns: list[Turn], expected: Turn | None) -> None:
    messages = call_messages(body)
    assert messages is not None
    assert owner(turns, messages) == expected


def test_the_user_messages_of_each_api_are_read() -> None:
    responses = {"model": "m", "instructions": "Hi there", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Hi  there"}]}]}
    anthropic = {"model": "m", "system": "Hi", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Hi there"}]},
        {"role": "assistant", "content": "Hi"}]}
    embeddings = {"model": "m", "input": ["Hi there"]}
    for payload in (responses, anthropic, embeddings):
        assert call_messages(json.dumps(payload).encode()) == ["Hi there"], payload
    assert call_messages(b"not json") is None
