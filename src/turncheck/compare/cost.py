"""The cost side of a comparison: the alert when the cost grows past the thresholds, and
the notes when costs cannot be compared (unpriced, priced differently)."""

from __future__ import annotations

import math

from turncheck.report.comparison import (
    CostAlert,
    CostThresholds,
    Summary,
)
from turncheck.report.run import Report

# --- cost alert -------------------------------------------------------------------


def _over(value: float, limit: float) -> bool:
    # Tolerance, so that 1.10 − 1.00 is not "more than 10%" through float rounding.
    return value > limit and not math.isclose(value, limit, rel_tol=1e-9, abs_tol=1e-12)


def cost_percent(base_cost: float, head_cost: float) -> float | None:
    return None if base_cost == 0 else (head_cost - base_cost) / base_cost * 100


def alert_reasons(base_cost: float, head_cost: float, thresholds: CostThresholds) -> list[str]:
    delta, reasons = head_cost - base_cost, []
    if thresholds.percent is not None and delta > 0:
        percent = cost_percent(base_cost, head_cost)
        if percent is None:
            reasons.append(f"cost grew from $0 (more than {thresholds.percent:g}%)")
        elif _over(percent, thresholds.percent):
            reasons.append(f"cost grew {percent:.1f}% (more than {thresholds.percent:g}%)")
    if thresholds.usd is not None and _over(delta, thresholds.usd):
        reasons.append(f"cost grew ${delta:.6g} (more than ${thresholds.usd:g})")
    return reasons


def cost_alert(base_cost: float, head_cost: float, thresholds: CostThresholds) -> CostAlert | None:
    reasons = alert_reasons(base_cost, head_cost, thresholds)
    if not reasons:
        return None
    return CostAlert(
        base_cost=base_cost, head_cost=head_cost, delta_usd=head_cost - base_cost,
        delta_percent=cost_percent(base_cost, head_cost), reasons=reasons,
    )


def _unpriced_note(report: Report, side: str) -> str:
    models = ", ".join(report.totals.unpriced_models)
    return f"{side} is unpriced" + (f" (no known price for {models})" if models else "")


def cost_note(base: Report | None, head: Report, totals: Summary) -> str | None:
    if base is None:
        return "no base report: costs were not compared"
    notes = [
        _unpriced_note(report, side)
        for report, side, spend in ((base, "base", totals.base), (head, "head", totals.head))
        if spend is None or spend.total_cost_usd is None
    ]
    return "costs could not be compared: " + "; ".join(notes) if notes else None


def price_note(base: Report | None, head: Report) -> str | None:
    if base is None:
        return None
    old, new = base.price_source, head.price_source
    if (old.timestamp, old.version) == (new.timestamp, new.version):
        return None
    return (
        f"base was priced at {old.timestamp} ({old.library} {old.version}), "
        f"head at {new.timestamp} ({new.library} {new.version})"
    )


