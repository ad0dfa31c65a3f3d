"""The one reading of a model's reported token counts as `Usage` (eval, protocol,
simulated-user, grader and app calls, and the budget guard alike)."""

from __future__ import annotations

from typing import Protocol

from turncheck.report.spend import Usage


class ReportsTokens(Protocol):
    @property
    def input_tokens(self) -> int | None: ...

    @property
    def output_tokens(self) -> int | None: ...


class ReportsInputTokens(Protocol):
    @property
    def input_tokens(self) -> int | None: ...


def chat_usage(response: ReportsTokens) -> Usage:
    """A chat answer's (or an app's model call's) usage; a count not reported is 0."""
    return Usage(input_tokens=response.input_tokens or 0, output_tokens=response.output_tokens or 0)


def embedding_usage(response: ReportsInputTokens) -> Usage:
    """An embedding call's usage: input tokens only."""
    return Usage(input_tokens=response.input_tokens or 0)
