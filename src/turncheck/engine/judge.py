"""The `llm_judge` check: a fixed, versioned judge prompt and a strict parser.

The judge sees the whole conversation and the criteria and must answer JSON
`{"pass": bool, "reason": str}` (a surrounding code fence is tolerated).
Anything else is an error for the check, never a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turncheck.providers.base import ChatMessage

JUDGE_PROMPT_VERSION = "turncheck-judge/1"

JUDGE_SYSTEM_PROMPT = f"""You are an exacting evaluator ({JUDGE_PROMPT_VERSION}).
You are shown a conversation between a user and an assistant, and criteria.
Decide whether the assistant's LAST reply meets the criteria, taking the whole
conversation into account. Answer with JSON only, exactly of the form
{{"pass": true or false, "reason": "one short sentence"}}."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass", "reason"],
}

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str


class JudgeAnswerError(ValueError):
    """The judge's answer is not the JSON verdict it was asked for."""


def judge_messages(conversation: Sequence[ChatMessage], criteria: str) -> list[ChatMessage]:
    transcript = "\n\n".join(f"[{m.role}]\n{m.content}" for m in conversation)
    user = f"<conversation>\n{transcript}\n</conversation>\n\n<criteria>\n{criteria}\n</criteria>"
    return [ChatMessage("system", JUDGE_SYSTEM_PROMPT), ChatMessage("user", user)]


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match["body"] if match else text.strip()


def parse_verdict(text: str) -> Verdict:
    try:
        data = json.loads(_unfenced(text))
    except json.JSONDecodeError as exc:
        raise JudgeAnswerError(f"judge answer is not JSON: {_excerpt(text)}") from exc
    if not isinstance(data, dict):
        raise JudgeAnswerError(f"judge answer is not a JSON object: {_excerpt(text)}")
    verdict, reason = data.get("pass"), data.get("reason")
    if not isinstance(verdict, bool) or not isinstance(reason, str):
        raise JudgeAnswerError(
            f'judge answer must be {{"pass": bool, "reason": str}}, got {_excerpt(text)}'
        )
    return Verdict(verdict, reason)


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
