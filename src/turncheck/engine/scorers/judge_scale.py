"""`judge_scale`: the judge model rates the last reply against a rubric on the scorer's
scale (`scale: [lowest, highest]`, default 1 to 5).

The judge answers turncheck's fixed prompt (`turncheck-judge-scale/2`), which
shows it the whole conversation and the rubric, with JSON
`{"score": rating, "reason": str}` (a code fence around it is tolerated, and an
integer string such as "4"). The score is (rating − lowest) / (highest − lowest). A
rating off the scale, or anything else, is an error for the scorer, never a score.
Version 2 asks for the answer as structured output (`rating_answer`), enforced by the
provider where it can. With the default scale the prompt is the one recorded before
scales existed, so older cassettes replay.
"""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.engine.judge import (
    JudgeAnswerError,
    answer_schema,
    parse_scored,
    transcript,
)
from turncheck.engine.scorers.base import ScoringContext, result
from turncheck.formats.protocol import DEFAULT_SCALE, JudgeScaleSpec, Scorer
from turncheck.providers.base import AnswerSchema, ChatMessage, ProviderError
from turncheck.report.protocol import JudgeScaleDetail, ScorerResult
from turncheck.text.money import rating_text

JUDGE_SCALE_PROMPT_VERSION = "turncheck-judge-scale/2"
MIN_RATING, MAX_RATING = DEFAULT_SCALE


def rating_answer(lowest: int = MIN_RATING, highest: int = MAX_RATING) -> AnswerSchema:
    return answer_schema("turncheck_rating", "score",
                         {"type": "integer", "enum": list(range(lowest, highest + 1))})


def system_prompt(lowest: int = MIN_RATING, highest: int = MAX_RATING) -> str:
    return f"""You are an exacting evaluator ({JUDGE_SCALE_PROMPT_VERSION}).
You are shown a conversation between a user and an assistant, and a rubric.
Rate the assistant's LAST reply against the rubric, taking the whole conversation
into account, on an integer scale from {lowest} (does not meet it at all) to
{highest} (meets it fully). Answer with JSON only, exactly of the form
{{"score": an integer from {lowest} to {highest}, "reason": "one short sentence"}}."""


JUDGE_SCALE_SYSTEM_PROMPT = system_prompt()


def judge_scale_messages(conversation: Sequence[ChatMessage], rubric: str,
                         lowest: int = MIN_RATING, highest: int = MAX_RATING
                         ) -> list[ChatMessage]:
    user = (
        f"<conversation>\n{transcript(conversation)}\n</conversation>\n\n"
        f"<rubric>\n{rubric}\n</rubric>"
    )
    return [ChatMessage("system", system_prompt(lowest, highest)), ChatMessage("user", user)]


def parse_rating(text: str, lowest: int = MIN_RATING, highest: int = MAX_RATING
                 ) -> tuple[int, str]:
    """(rating, reason) from the judge's answer; JudgeAnswerError when it is anything else
    (a rating off the scale included)."""
    return parse_scored(text, "judge", range(lowest, highest + 1), f"{lowest}..{highest}")


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    spec: JudgeScaleSpec = scorer.spec
    lowest, highest = spec.lowest, spec.highest
    rubric = ctx.render(spec.rubric)
    try:
        answer = await ctx.judge(judge_scale_messages(ctx.conversation, rubric, lowest, highest),
                                 rating_answer(lowest, highest))
        rating, reason = parse_rating(answer, lowest, highest)
    except ProviderError as exc:
        return result(scorer, None, f'judge_scale "{rubric}"',
                      error=f"judge call failed: {exc.message}")
    except JudgeAnswerError as exc:
        return result(scorer, None, f'judge_scale "{rubric}"', error=str(exc))
    return result(
        scorer, (rating - lowest) / (highest - lowest),
        f"rated {rating_text(rating, spec.scale)}: {reason}",
        judge_scale=JudgeScaleDetail(rating=rating, reason=reason,
                                     prompt_version=JUDGE_SCALE_PROMPT_VERSION,
                                     scale=list(spec.scale)),
    )
