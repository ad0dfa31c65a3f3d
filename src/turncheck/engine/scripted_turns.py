"""Scripted turns (`turns:` in an eval): user messages always sent, in order.

Each turn's checks are played as a level with the follow-ups they carry; the next
scripted turn is sent whether or not this one passed, so the report shows every
turn's checks. The eval passes when every turn passed, and names the first turn
that failed (docs/suites.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from turncheck.formats.suite import CheckList, Turn

PlayLevel = Callable[[CheckList, int], Awaitable[tuple[bool, int]]]
"""Plays one level (its checks, the line of its prompt) with its follow-ups: whether it
passed, and the number of the conversation's last turn so far."""
SendNext = Callable[[str], None]
"""Adds the last answer and the next user message (a scripted turn's prompt)."""


@dataclass(frozen=True)
class ScriptedOutcome:
    passed: bool
    last_turn: int
    """The conversation's last turn (follow-ups count as turns)."""
    failed_on_turn: int | None
    """The turn whose checks failed first (and whose follow-ups, if any, did not fix it)."""


async def play_scripted_turns(turns: Sequence[Turn], play: PlayLevel,
                              send_next: SendNext) -> ScriptedOutcome:
    """Every scripted turn in order; the first turn's prompt is already in the conversation."""
    failed_on: int | None = None
    last = 0
    for index, turn in enumerate(turns):
        if index:
            send_next(turn.prompt)
        passed, last = await play(turn.checks, turn.line)
        if not passed and failed_on is None:
            failed_on = last
    return ScriptedOutcome(failed_on is None, last, failed_on)
