"""The latency of app suites' replies, base → head, as the comment, the HTML report and
the console say it: medians and 95th percentiles of the first token and of the whole
reply, over every turn of each side (live and record runs only)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from turncheck.report.comparison import Comparison, LatencyComparison

DASH = "–"


@dataclass(frozen=True)
class LatencyRow:
    suite: str
    first_token_p50: str
    first_token_p95: str
    total_p50: str
    total_p95: str
    turns: str
    verdict: str
    """`slower than 20% allows (p=0.0004)`, `+3.1%`."""


def _ms(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f} ms"


def _pair(base: float | None, head: float | None) -> str:
    return f"{_ms(base)} → {_ms(head)}"


def _verdict(latency: LatencyComparison, threshold: float | None) -> str:
    change = DASH if latency.change_percent is None else f"{latency.change_percent:+.1f}%"
    if latency.slower:
        return f"{change}: slower than {threshold or 0:g}% allows (p={latency.p_value:.2g})"
    if latency.p_value is not None:
        return f"{change}: within {threshold or 0:g}% (p={latency.p_value:.2g})"
    return change


def latency_rows(comparison: Comparison) -> list[LatencyRow]:
    threshold = comparison.thresholds.latency_percent
    return [LatencyRow(
        suite=suite.name,
        first_token_p50=_pair(latency.base.first_token_p50_ms, latency.head.first_token_p50_ms),
        first_token_p95=_pair(latency.base.first_token_p95_ms, latency.head.first_token_p95_ms),
        total_p50=_pair(latency.base.total_p50_ms, latency.head.total_p50_ms),
        total_p95=_pair(latency.base.total_p95_ms, latency.head.total_p95_ms),
        turns=f"{latency.base.turns} → {latency.head.turns}",
        verdict=_verdict(latency, threshold))
        for suite in comparison.suites if (latency := suite.latency) is not None]


def latency_lines(comparison: Comparison) -> Iterator[str]:
    for row in latency_rows(comparison):
        yield (f"latency: {row.suite}: reply p50 {row.total_p50}, p95 {row.total_p95}; "
               f"first token p50 {row.first_token_p50}, p95 {row.first_token_p95} "
               f"({row.turns} turns) {row.verdict}")
