"""`judge_scale`: the judge model rates the last reply against a rubric from 1 to 5.

The judge answers turncheck's fixed prompt (`turncheck-judge-scale/2`), which
shows it the whole conversation and the rubric, with JSON
`{"score": 1..5, "reason": str}` (a code fence around it is tolerated, and an
integer string such as "4"). The score is (rating − 1) / 4. Anything else is an
error for the scorer, never a score. Version 2 asks for the answer as structured
output (`RATING_ANSWER`), enforced by the provider where it can.
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
from turncheck.formats.protocol import JudgeScaleSpec, Scorer
from turncheck.providers.base import ChatMessage, ProviderError
from turncheck.report.protocol import JudgeScaleDetail, ScorerResult

JUDGE_SCALE_PROMPT_VERSION = "turncheck-judge-scale/2"
MIN_RATING, MAX_RATING = 1, 5
RATING_ANSWER = answer_schema(
    "turncheck_rating",
    "score",
    {"type": "integer", "enum": list(range(MIN_RATING, MAX_RATING + 1))},
)

JUDGE_SCALE_SYSTEM_PROMPT = f"""You are an exacting evaluator ({JUDGE_SCALE_PROMPT_VERSION}).
You are shown a conversation between a user and an assistant, and a rubric.
Rate the assistant's LAST reply against the rubric, taking the whole conversation
into account, on an integer scale from {MIN_RATING} (does not meet it at all) to
{MAX_RATING} (meets it fully). Answer with JSON only, exactly of the form
{{"score": an integer from {MIN_RATING} to {MAX_RATING}, "reason": "one short sentence"}}."""

def judge_scale_messages(conversation: Sequence[ChatMessage], rubric: str) -> list[ChatMessage]:
    user = (
        f"<conversation>\n{transcript(conversation)}\n</conversation>\n\n"
        f"<rubric>\n{rubric}\n</rubric>"
    )
    return [ChatMessage("system", JUDGE_SCALE_SYSTEM_PROMPT), ChatMessage("user", user)]


def parse_rating(text: str) -> tuple[int, str]:
    """(rating, reason) from the judge's answer; JudgeAnswerError when it is anything else."""
    return parse_scored(text, "judge", range(MIN_RATING, MAX_RATING + 1),
                        f"{MIN_RATING}..{MAX_RATING}")


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    spec: JudgeScaleSpec = scorer.spec
    rubric = ctx.render(spec.rubric)
    try:
        answer = await ctx.judge(judge_scale_messages(ctx.conversation, rubric), RATING_ANSWER)
        rating, reason = parse_rating(answer)
    except ProviderError as exc:
        return result(scorer, None, f'judge_scale "{rubric}"',
                      error=f"judge call failed: {exc.message}")
    except JudgeAnswerError as exc:
        return result(scorer, None, f'judge_scale "{rubric}"', error=str(exc))
    return result(
        scorer, (rating - MIN_RATING) / (MAX_RATING - MIN_RATING), f"rated {rating}/5: {reason}",
        judge_scale=JudgeScaleDetail(rating=rating, reason=reason,
                                     prompt_version=JUDGE_SCALE_PROMPT_VERSION),
    )
