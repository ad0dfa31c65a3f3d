"""What a scorer sees of a turn, and the calls it may make."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from turncheck.engine.scorers.extract import Extraction
from turncheck.formats.protocol import Scorer
from turncheck.providers.base import AnswerSchema, ChatMessage
from turncheck.report.protocol import ScorerResult


class ScorerError(Exception):
    """A scorer could not be evaluated; recorded as the scorer's `error`."""


@dataclass
class ScoringContext:
    response: str
    reported_output_tokens: int | None
    conversation: Sequence[ChatMessage]
    """The whole conversation, ending with this turn's response."""
    extraction: Extraction
    render: Callable[[str], str]
    """Renders a template with the case and the earlier turns."""
    evaluate: Callable[[str], Any]
    """Evaluates an expression with the case and the earlier turns."""
    judge: Callable[[list[ChatMessage], AnswerSchema], Awaitable[str]]
    embed: Callable[[list[str]], Awaitable[list[list[float]]]]

    def value(self, spec: Any) -> Any:
        """`spec` itself, or what it evaluates to when it is an expression (a string)."""
        return self.evaluate(spec) if isinstance(spec, str) else spec


def result(scorer: Scorer, score: float | None, detail: str, **details: Any) -> ScorerResult:
    """`scorer`'s result; `details` are the other `ScorerResult` fields (error, list_f1, …)."""
    return ScorerResult(id=scorer.id, type=scorer.kind, weight=scorer.weight, score=score,
                        detail=detail, **details)
