"""Compare a head run report with its base: transitions, deltas and the cost alert."""

from turncheck.compare.comparison import (
    Comparison,
    CostAlert,
    CostThresholds,
    Counts,
    EvalComparison,
    EvalSide,
    Spend,
    SuiteComparison,
    SuiteState,
    Summary,
    Transition,
    compare_reports,
)

__all__ = [
    "Comparison",
    "CostAlert",
    "CostThresholds",
    "Counts",
    "EvalComparison",
    "EvalSide",
    "Spend",
    "SuiteComparison",
    "SuiteState",
    "Summary",
    "Transition",
    "compare_reports",
]
