"""The latency of an app suite's replies, base → head (docs/targets.md, "Latency"): per
side the median and 95th percentile of every turn's first-token and total latency, and,
with a threshold, whether head is slower than it allows by a test over all the turns
(`stats/latency.py`). Only when both sides ran live or recorded: a replayed run's
latencies are the app's against a cassette, not today's."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from turncheck.report.comparison import LatencyComparison, LatencySide
from turncheck.report.results import TurnResult
from turncheck.report.run import Report, SuiteResult
from turncheck.stats.latency import ALPHA, MIN_TURNS, quantile, slower_p

MEASURED_MODES = frozenset({"live", "record"})


def measured(report: Report | None) -> bool:
    return report is not None and report.mode in MEASURED_MODES


def _app_turns(suite: SuiteResult) -> Iterator[TurnResult]:
    for result in suite.evals:
        for conversation in [s.turns for s in result.samples] or [result.turns]:
            yield from (t for t in conversation if t.app_model_calls is not None)


def _side(turns: Sequence[TurnResult]) -> LatencySide | None:
    totals = [t.latency_ms for t in turns]
    if not totals:
        return None
    firsts = [t.first_token_ms for t in turns if t.first_token_ms is not None]
    return LatencySide(
        turns=len(totals), total_p50_ms=round(quantile(totals, 0.5), 1),
        total_p95_ms=round(quantile(totals, 0.95), 1),
        first_token_p50_ms=round(quantile(firsts, 0.5), 1) if firsts else None,
        first_token_p95_ms=round(quantile(firsts, 0.95), 1) if firsts else None)


def latency_of(base: SuiteResult | None, head: SuiteResult | None,
               threshold_percent: float | None) -> LatencyComparison | None:
    """None unless both sides have app turns (the caller checks both ran measured)."""
    if base is None or head is None:
        return None
    base_turns, head_turns = list(_app_turns(base)), list(_app_turns(head))
    before, after = _side(base_turns), _side(head_turns)
    if before is None or after is None:
        return None
    change = None if not before.total_p50_ms else \
        round((after.total_p50_ms / before.total_p50_ms - 1) * 100, 1)
    if threshold_percent is None or min(before.turns, after.turns) < MIN_TURNS:
        return LatencyComparison(base=before, head=after, change_percent=change)
    p = slower_p([t.latency_ms for t in base_turns], [t.latency_ms for t in head_turns],
                 threshold_percent / 100)
    return LatencyComparison(base=before, head=after, change_percent=change,
                             p_value=round(p, 6), slower=p < ALPHA)
