"""How a turn's tool calls read in transcripts (console and PR comment)."""

from __future__ import annotations

from turncheck.engine.tools import arguments_text
from turncheck.report.results import ToolCallResult

MAX_RESULT_CHARS = 300
"""Characters of a scripted result a transcript line shows."""


def call_text(call: ToolCallResult) -> str:
    """One call: `round 1: get_weather(city="Paris") → {"forecast": "sunny"}`."""
    result = call.result if call.result is not None else (
        "(run by the app)" if call.by_app else "(no result)")
    if len(result) > MAX_RESULT_CHARS:
        result = result[:MAX_RESULT_CHARS] + "…"
    return f"round {call.round}: {call.name}({arguments_text(call.arguments)}) → {result}"
