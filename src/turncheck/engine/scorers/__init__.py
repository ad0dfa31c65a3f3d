"""Protocol scorers: each turns one response into a score in 0..1.

`list_f1`, `order`, `judge_scale`, `self_assessment`, and every check of docs/suites.md as a
0/1 scorer. `score` never raises: a scorer that cannot be evaluated (an expression
that fails, a judge answer that cannot be parsed, a provider failure) gets an `error`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import jinja2

from turncheck.engine.scorers import checks, judge_scale, list_f1, order, self_assessment
from turncheck.engine.scorers.base import ScorerError, ScoringContext
from turncheck.formats.hierarchy import HierarchyError
from turncheck.formats.protocol import Scorer
from turncheck.providers.base import ProviderError
from turncheck.report.protocol import ScorerResult

ScoreFunction = Callable[[Scorer, ScoringContext], Awaitable[ScorerResult]]
SCORERS: dict[str, ScoreFunction] = {
    "list_f1": list_f1.score,
    "order": order.score,
    "judge_scale": judge_scale.score,
    "self_assessment": self_assessment.score,
}


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    function = SCORERS.get(scorer.kind, checks.score)
    try:
        return await function(scorer, ctx)
    except (ScorerError, HierarchyError, jinja2.TemplateError, TypeError, ValueError,
            ProviderError) as exc:
        message = exc.message if isinstance(exc, ProviderError) else str(exc)
        return ScorerResult(
            id=scorer.id, type=scorer.kind, weight=scorer.weight, score=None,
            detail=f"{scorer.kind}: not evaluated", error=f"{scorer.kind}: {message}",
        )


__all__ = ["score"]
