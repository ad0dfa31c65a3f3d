"""`order`: required precedence pairs, e.g. Singlets before Live.

A pair [A, B] is `ok` when A comes before B among the names extracted from the
response (a parent comes before its children), `reversed` when B comes first,
`missing` when either is absent. The score is ok pairs / counted pairs, where
`missing: fail` (default) counts every pair and `missing: skip` only pairs with
both names present (no such pair: 0).
"""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.engine.scorers.base import ScorerError, ScoringContext
from turncheck.formats.names import DEFAULT_THRESHOLD, similarity
from turncheck.formats.protocol import OrderSpec, Scorer
from turncheck.report.protocol import OrderDetail, PairResult, ScorerResult


def _position(items: Sequence[str], name: str, threshold: float) -> int | None:
    best: tuple[float, int] | None = None
    for index, item in enumerate(items):
        score = similarity(item, name)
        if score >= threshold and (best is None or score > best[0]):
            best = (score, index)
    return None if best is None else best[1]


def order_detail(
    items: Sequence[str],
    pairs: Sequence[Sequence[str]],
    missing: str = "fail",
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[float, OrderDetail]:
    results: list[PairResult] = []
    for before, after in pairs:
        first, second = _position(items, before, threshold), _position(items, after, threshold)
        if first is None or second is None or first == second:
            status = "missing"
        else:
            status = "ok" if first < second else "reversed"
        results.append(PairResult(before=before, after=after, status=status))
    satisfied = sum(r.status == "ok" for r in results)
    counted = len(results) if missing == "fail" else sum(r.status != "missing" for r in results)
    value = satisfied / counted if counted else 0.0
    return value, OrderDetail(pairs=results, satisfied=satisfied, counted=counted)


def _pairs(value: object) -> list[list[str]]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(p, list | tuple) and len(p) == 2 and all(isinstance(n, str) for n in p)
        for p in value
    ):
        raise ScorerError("pairs must be a list of [before, after] name pairs")
    return [[str(a), str(b)] for a, b in value]


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    spec: OrderSpec = scorer.spec
    pairs = _pairs(ctx.value(spec.pairs))
    value, detail = order_detail(ctx.extraction.names, pairs, spec.missing, spec.threshold)
    wrong = [f"{p.before} → {p.after} {p.status}" for p in detail.pairs if p.status != "ok"]
    text = f"{detail.satisfied}/{detail.counted} pairs in order"
    if wrong:
        text += "; " + "; ".join(wrong)
    return ScorerResult(
        id=scorer.id, type=scorer.kind, weight=scorer.weight, score=value, detail=text,
        order=detail,
    )
