"""`list_f1`: names extracted from the response against the expected names.

precision = matched / extracted, recall = matched / expected, F1 their harmonic mean
(0 when both are 0). With nothing expected, recall is 1; with nothing extracted,
precision is 1 only when nothing was expected either. Matching is one-to-one and
fuzzy (see `turncheck.formats.names`). `missing` are expected names no extracted
name matches; `hallucinated` are extracted names that match no expected name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from turncheck.engine.scorers.base import ScorerError, ScoringContext
from turncheck.formats.hierarchy import HierarchyError, names
from turncheck.formats.names import DEFAULT_THRESHOLD, match_names, unique_names
from turncheck.formats.protocol import ListF1Spec, Scorer
from turncheck.report.protocol import ListF1Detail, NameMatch, ScorerResult


def list_f1(
    predicted: Sequence[str],
    expected: Sequence[str],
    threshold: float = DEFAULT_THRESHOLD,
    aliases: Mapping[str, str] | None = None,
) -> ListF1Detail:
    predicted, expected = unique_names(predicted), unique_names(expected)
    matches = match_names(predicted, expected, threshold, aliases)
    hit_p = {m.predicted for m in matches}
    hit_e = {m.expected for m in matches}
    found = len(matches)
    precision = found / len(predicted) if predicted else (0.0 if expected else 1.0)
    recall = found / len(expected) if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ListF1Detail(
        precision=precision, recall=recall, f1=f1,
        matched=[NameMatch(predicted=m.predicted, expected=m.expected,
                           similarity=m.similarity) for m in matches],
        missing=[name for name in expected if name not in hit_e],
        hallucinated=[name for name in predicted if name not in hit_p],
        extracted=list(predicted), expected=list(expected),
    )


def describe(detail: ListF1Detail) -> str:
    text = f"P {detail.precision:.2f} R {detail.recall:.2f} F1 {detail.f1:.2f}"
    if detail.missing:
        text += "; missing: " + ", ".join(detail.missing)
    if detail.hallucinated:
        text += "; hallucinated: " + ", ".join(detail.hallucinated)
    return text


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    spec: ListF1Spec = scorer.spec
    try:
        expected = names(ctx.value(spec.expected))
    except HierarchyError as exc:
        raise ScorerError(f"expected: {exc}") from exc
    detail = list_f1(ctx.extraction.names, expected, spec.threshold, spec.aliases)
    return ScorerResult(
        id=scorer.id, type=scorer.kind, weight=scorer.weight, score=detail.f1,
        detail=describe(detail), list_f1=detail,
    )
