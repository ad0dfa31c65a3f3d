"""Every eval-suite check as a 0/1 scorer: 1 when the check passes, 0 when it fails."""

from __future__ import annotations

from turncheck.engine.checks import TurnContext, evaluate_check
from turncheck.engine.scorers.base import ScoringContext
from turncheck.formats.protocol import Scorer
from turncheck.report.protocol import ScorerResult


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    turn = TurnContext(
        response=ctx.response,
        reported_output_tokens=ctx.reported_output_tokens,
        conversation=ctx.conversation,
        render=ctx.render,
        judge=ctx.judge,
        embed=ctx.embed,
    )
    result = await evaluate_check(scorer.spec, turn)
    value = None if result.error else (1.0 if result.passed else 0.0)
    return ScorerResult(
        id=scorer.id, type=scorer.kind, weight=scorer.weight, score=value,
        detail=result.detail, error=result.error, check=result,
    )
