"""The verdict view: a comparison and the conditions it is judged by → what fails the
check and why. The action, `turncheck compare`, `turncheck diff` and the public API
judge through here, so a reason reads the same wherever it is shown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from turncheck.compare.comparison import NO_RENAMES, NO_THRESHOLDS, compare_reports
from turncheck.compare.policy import (
    NO_CALIBRATION_THRESHOLDS,
    Conditions,
    fail_reasons,
    incomplete,
)
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import Comparison, CostThresholds
from turncheck.report.pool import BasePool
from turncheck.report.run import Report


@dataclass(frozen=True)
class Judgement:
    """What the conditions a run is judged by say of a comparison."""

    conditions: Conditions
    thresholds: CostThresholds = NO_THRESHOLDS
    calibration: CalibrationThresholds = NO_CALIBRATION_THRESHOLDS


@dataclass(frozen=True)
class VerdictView:
    comparison: Comparison
    reasons: list[str]
    """Why the check fails; empty when it passes."""

    @property
    def failed(self) -> bool:
        return bool(self.reasons)

    @property
    def incomplete(self) -> bool:
        """Some rows were not run (a budget stopped them): never a plain success."""
        return incomplete(self.comparison)

    @property
    def exit_code(self) -> int:
        return 1 if self.reasons else 0


def judged(comparison: Comparison, judgement: Judgement) -> VerdictView:
    """The view of a comparison made already (its cost alert used `judgement`'s
    thresholds when it was made)."""
    return VerdictView(comparison, fail_reasons(comparison, judgement.conditions,
                                                calibration=judgement.calibration))


def verdict_view(base: Report | None, head: Report, judgement: Judgement, *,
                 renames: Mapping[str, str] = NO_RENAMES, removed: Iterable[str] = (),
                 base_pool: BasePool | None = None) -> VerdictView:
    """Compare `head` with `base` and judge the comparison."""
    comparison = compare_reports(base, head, renames=renames, removed=removed,
                                 thresholds=judgement.thresholds, base_pool=base_pool)
    return judged(comparison, judgement)
