"""`self_assessment`: the model's own estimate of how well it did, against its measured score.

The estimate is read from the response: with `pattern`, the first match of that
regular expression (its group, if it has one); otherwise the first number after a
word such as "estimate", "score", "F1", "accuracy", "recall", then the first
percentage, then the first "N/M" or "N out of M". "62%" and "62 percent" are 0.62,
"5/8" and "5 out of 8" are 0.625, a bare 0.62 is 0.62 and a bare 62 is 0.62.
The score is 1 − |estimate − actual| (0 when no estimate is found); `actual` is a
number in 0..1 or an expression such as `turns.refinement.scores.gates`.
"""

from __future__ import annotations

import math
import re

from turncheck.engine.scorers.base import ScorerError, ScoringContext, result
from turncheck.formats.protocol import Scorer, SelfAssessmentSpec
from turncheck.report.protocol import ScorerResult, SelfAssessmentDetail
from turncheck.text.user_regex import RegexWorkError, check_work, first_match

_NUMBER = r"\d+(?:\.\d+)?"
_VALUE = re.compile(
    rf"(?P<a>{_NUMBER})\s*(?:(?P<pct>%|percent)|(?:/|\bout of\b)\s*(?P<b>{_NUMBER}))?",
    re.IGNORECASE,
)
_LABELLED = re.compile(
    r"\b(?:estimate[sd]?|self[- ]?assessment|score|f1|accuracy|recall|overall)\b"
    rf"[^0-9\n]{{0,40}}?(?P<value>{_NUMBER}\s*(?:%|percent|(?:/|out of)\s*{_NUMBER})?)",
    re.IGNORECASE,
)
# (?<!\d): a match starts where a digit run starts, so a run of a million digits is
# scanned once, not once per digit (quadratic, benchmarks/hostile.py).
_PERCENT = re.compile(rf"(?<!\d){_NUMBER}\s*(?:%|percent)", re.IGNORECASE)
_RATIO = re.compile(rf"\b{_NUMBER}\s*(?:/|out of)\s*{_NUMBER}", re.IGNORECASE)


def as_fraction(text: str) -> float | None:
    """"62%" → 0.62, "5/8" → 0.625, "0.62" → 0.62, "62" → 0.62; None if not in 0..1."""
    match = _VALUE.search(text)
    if match is None:
        return None
    value = float(match["a"])
    if match["pct"]:
        value /= 100
    elif match["b"] is not None:
        denominator = float(match["b"])
        if denominator == 0:
            return None
        value /= denominator
    elif value > 1:
        value /= 100
    return value if 0 <= value <= 1 else None


def find_estimate(text: str, pattern: str | None = None) -> tuple[float, str] | None:
    """(estimate in 0..1, the text it was read from), or None."""
    if pattern is not None:
        try:
            check_work([pattern], text)
        except RegexWorkError as exc:
            raise ScorerError(str(exc)) from None
        quote = first_match(pattern, text)
        if quote is None:
            return None
        value = as_fraction(quote or "")
        return None if value is None else (value, quote)
    for finder in (_LABELLED, _PERCENT, _RATIO):
        for match in finder.finditer(text):
            quote = match.group("value") if "value" in finder.groupindex else match.group(0)
            value = as_fraction(quote)
            if value is not None:
                return value, match.group(0).strip()
    return None


def _actual(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ScorerError(f"actual must be a number from 0 to 1, got {value!r}")
    if not 0 <= value <= 1:
        raise ScorerError(f"actual must be from 0 to 1, got {value}")
    return float(value)


async def score(scorer: Scorer, ctx: ScoringContext) -> ScorerResult:
    spec: SelfAssessmentSpec = scorer.spec
    actual = _actual(ctx.value(spec.actual))
    found = find_estimate(ctx.response, spec.pattern)
    if found is None:
        return result(
            scorer, 0.0, f"no self-assessed estimate found (measured {actual:.2f})",
            self_assessment=SelfAssessmentDetail(estimate=None, actual=actual),
        )
    estimate, quote = found
    return result(
        scorer, 1 - abs(estimate - actual), f"estimated {estimate:.2f}, measured {actual:.2f}",
        self_assessment=SelfAssessmentDetail(estimate=estimate, actual=actual, quote=quote),
    )
