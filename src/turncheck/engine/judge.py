"""Fixed, versioned model-as-judge prompts and their strict answer parsers.

- The `llm_judge` check (`turncheck-judge/2`): the judge sees the whole
  conversation and the criteria and must answer JSON `{"pass": bool, "reason": str}`.
  Anything else is an error for the check, never a pass.
- Sample-file graders with `criteria` (`turncheck-grader/2`): the grader scores
  the whole conversation on -3..+3 and must answer JSON `{"score": int, "reason": str}`
  (an integer string such as "2" is accepted). Anything else is an error row, never a 0.

Version 2 asks for that answer as structured output (`VERDICT_ANSWER`,
`GRADE_ANSWER`: a JSON schema the provider enforces where it can, see
`turncheck.providers.structured`); the prompt still spells the format out, for
providers that fall back to prompt-and-parse. Both parsers share one JSON reader
that tolerates a surrounding code fence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from turncheck.providers.base import AnswerSchema, ChatMessage

MIN_GRADER_SCORE = -3
MAX_GRADER_SCORE = 3
JUDGE_PROMPT_VERSION = "turncheck-judge/2"
GRADER_PROMPT_VERSION = "turncheck-grader/2"

JUDGE_SYSTEM_PROMPT = f"""You are an exacting evaluator ({JUDGE_PROMPT_VERSION}).
You are shown a conversation between a user and an assistant, and criteria.
Decide whether the assistant's LAST reply meets the criteria, taking the whole
conversation into account. Answer with JSON only, exactly of the form
{{"pass": true or false, "reason": "one short sentence"}}."""

GRADER_SYSTEM_PROMPT = f"""You are an exacting evaluator ({GRADER_PROMPT_VERSION}).
You are shown a conversation between a user and an assistant, and criteria.
Score how well the assistant's replies meet the criteria, taking the whole
conversation into account, on an integer scale from -3 (fails them completely)
through 0 (mixed) to 3 (meets them fully). Answer with JSON only, exactly of the
form {{"score": an integer from -3 to 3, "reason": "one short sentence"}}."""

GRADER_ANSWER_FORMAT = (
    "Score the assistant's replies against the criteria from -3 to 3. Answer with JSON "
    'only: {"score": <an integer from -3 to 3>, "reason": "<one short sentence>"}'
)


PLACEHOLDER_REASONS = frozenset({
    "one short sentence", "a short sentence", "short sentence", "sentence",
    "str", "string", "reason", "the reason", "your reason",
})
"""Reasons a small model copies from the prompts' answer format (`"one short sentence"`,
`"<one short sentence>"`) or from the schema (`str`, `string`): no reason at all."""
NO_REASON = "no reason given"

MAX_REASON_CHARS = 160
MAX_KEPT_REASON_CHARS = 2_000
"""A judge or grader asked for a reason of `MAX_REASON_CHARS` may ignore it (a hostile
or broken model): what reports keep of a longer reason, marked with `…`."""


def answer_schema(name: str, verdict_field: str, verdict: dict[str, Any]) -> AnswerSchema:
    """`{verdict_field: ..., "reason": str}` as an `AnswerSchema` (strict-mode compatible:
    every property required, no others). The reason's `maxLength` keeps a small model
    constrained by a grammar from filling its whole token budget with one string."""
    return AnswerSchema(
        name,
        {
            "type": "object",
            "properties": {
                verdict_field: verdict,
                "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
            },
            "required": [verdict_field, "reason"],
            "additionalProperties": False,
        },
    )


VERDICT_ANSWER = answer_schema("turncheck_verdict", "pass", {"type": "boolean"})
GRADE_ANSWER = answer_schema(
    "turncheck_grade",
    "score",
    {"type": "integer", "enum": list(range(MIN_GRADER_SCORE, MAX_GRADER_SCORE + 1))},
)

_FENCE_OPENER = re.compile(r"```[a-zA-Z0-9_-]*")


@dataclass(frozen=True)
class JudgeVerdict:
    passed: bool
    reason: str


@dataclass(frozen=True)
class Grade:
    score: int
    reason: str


class JudgeAnswerError(ValueError):
    """The judge's (or grader's) answer is not the JSON it was asked for."""


class Turn(Protocol):
    """A conversation message: `ChatMessage`, or a sample file's message (any role; an
    assistant's with only tool calls has no content)."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str | None: ...


def transcript(conversation: Sequence[Turn]) -> str:
    """The conversation as the judge and grader prompts show it. Each message is quoted
    input: what looks like the transcript's frame (a line `[user]`, `</conversation>`,
    `<criteria>`) is written escaped, so a reply cannot end the conversation early or
    add turns or criteria of its own."""
    return "\n\n".join(f"[{m.role}]\n{_quoted(_message_text(m))}" for m in conversation)


_FRAME = re.compile(r"^\[(?:user|assistant|system|tool)\]$|</?(?:conversation|criteria)>",
                    re.IGNORECASE | re.MULTILINE)


def _quoted(text: str) -> str:
    """`text` with what would pass for the transcript's frame escaped (`&lt;criteria&gt;`,
    `\\[user]`); `text` itself, byte for byte, when it holds none."""
    return _FRAME.sub(_escaped, text) if "[" in text or "<" in text else text


def _escaped(found: re.Match[str]) -> str:
    frame = found[0]
    return "\\" + frame if frame.startswith("[") else \
        frame.replace("<", "&lt;").replace(">", "&gt;")


_GRADER_LIKE = re.compile(
    r"\b(?:grader|judge|evaluator|verdict|grade)\s*:\s*\w+"
    r"|\bgoal\s+(?:met|achieved|reached)\b"
    r"|\"(?:pass|score)\"\s*:\s*(?:true|-?\d)"
    r"|\bignore\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|other)\s+"
    r"(?:instructions|criteria)"
    r"|\byou\s+are\s+(?:the|an?)\s+(?:grader|judge|evaluator)"
    r"|</?(?:conversation|criteria)>",
    re.IGNORECASE)


def grader_like(conversation: Sequence[Turn]) -> str | None:
    """The first instruction to a grader in the assistant's text of `conversation` (an
    app or a model that writes "GRADER: PASS" or "GOAL MET"), quoted short; None when
    there is none. A judge that follows instructions could follow it."""
    for message in conversation:
        if message.role != "assistant" or not message.content:
            continue
        found = _GRADER_LIKE.search(message.content)
        if found is not None:
            return _excerpt(found[0], 60)
    return None


def _message_text(message: Turn) -> str:
    """The message's text, then each function call it makes (an agent's turn)."""
    calls = [f"(calls {call.name} with {call.arguments})"
             for call in getattr(message, "tool_calls", None) or ()]
    return "\n".join([message.content, *calls] if message.content else calls)


def _framed(conversation: Sequence[Turn], criteria: str) -> str:
    return (
        f"<conversation>\n{transcript(conversation)}\n</conversation>\n\n"
        f"<criteria>\n{criteria}\n</criteria>"
    )


def judge_messages(conversation: Sequence[ChatMessage], criteria: str) -> list[ChatMessage]:
    return [
        ChatMessage("system", JUDGE_SYSTEM_PROMPT),
        ChatMessage("user", _framed(conversation, criteria)),
    ]


def grader_messages(conversation: Sequence[Turn], criteria: str) -> list[ChatMessage]:
    # The answer format is repeated last in the user message: some chat templates
    # (Gemma's) drop system messages, and small models follow what they read last.
    user = f"{_framed(conversation, criteria)}\n\n{GRADER_ANSWER_FORMAT}"
    return [ChatMessage("system", GRADER_SYSTEM_PROMPT), ChatMessage("user", user)]


def unfenced(text: str) -> str:
    """`text` stripped, and without a code fence that wraps the whole of it.

    No regex with `.*?` here: on a hostile answer with long whitespace runs the old
    pattern backtracked for minutes (see benchmarks/hostile.py).
    """
    stripped = text.strip()
    opener = _FENCE_OPENER.match(stripped)
    if opener is None or len(stripped) < opener.end() + 3 or not stripped.endswith("```"):
        return stripped
    return stripped[opener.end() : -3].strip()


def _json_object(text: str, who: str) -> dict[str, Any]:
    """The JSON object `text` holds (a code fence around it is tolerated)."""
    try:
        data = json.loads(unfenced(text))
    except (ValueError, RecursionError) as exc:  # ValueError: also int digit limits
        raise JudgeAnswerError(f"{who} answer is not JSON: {_excerpt(text)}") from exc
    if not isinstance(data, dict):
        raise JudgeAnswerError(f"{who} answer is not a JSON object: {_excerpt(text)}")
    return data


def parse_verdict(text: str) -> JudgeVerdict:
    data = _json_object(text, "judge")
    verdict, reason = data.get("pass"), data.get("reason")
    if not isinstance(verdict, bool) or not isinstance(reason, str):
        raise JudgeAnswerError(
            f'judge answer must be {{"pass": bool, "reason": str}}, got {_excerpt(text)}'
        )
    return JudgeVerdict(verdict, given_reason(reason, "judge"))


_INTEGER_STRING = re.compile(r"\s*[+-]?\d{1,3}\s*")


def parse_scored(text: str, who: str, scale: range, shape: str) -> tuple[int, str]:
    """`{"score": int, "reason": str}` with the score in `scale` (an integer string
    such as "4" counts): a grader's score, a judge's rating; `shape` names the score in
    the message for any other answer."""
    data = _json_object(text, who)
    score, reason = data.get("score"), data.get("reason")
    if isinstance(score, str) and _INTEGER_STRING.fullmatch(score):
        score = int(score)
    if isinstance(score, bool) or not isinstance(score, int) or not isinstance(reason, str):
        raise JudgeAnswerError(
            f'{who} answer must be {{"score": {shape}, "reason": str}}, got {_excerpt(text)}'
        )
    if score not in scale:
        raise JudgeAnswerError(
            f"{who} score must be an integer from {scale[0]} to {scale[-1]}, got {score}")
    return score, given_reason(reason, who)


def parse_grade(text: str) -> Grade:
    """A grader's `{"score": int, "reason": str}`; the score may be an integer string."""
    return Grade(*parse_scored(text, "grader", range(MIN_GRADER_SCORE, MAX_GRADER_SCORE + 1),
                               "int"))


def given_reason(reason: str, who: str) -> str:
    """The reason as reports show it: a blank one, or one the judge (or grader) copied
    from the prompt's placeholder, says that no reason was given instead of posing as one."""
    core = reason.strip().strip("<>\"'`.…[]() ").casefold()
    if not core:
        return NO_REASON
    if core in PLACEHOLDER_REASONS:
        return f"{NO_REASON} (the {who} copied the prompt's placeholder)"
    return _kept(reason)


def _kept(reason: str) -> str:
    return reason if len(reason) <= MAX_KEPT_REASON_CHARS else (
        reason[:MAX_KEPT_REASON_CHARS] + "…")


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
