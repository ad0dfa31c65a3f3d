"""The `fail-on` policy: which findings fail the check (and the CLI's exit code).

`regression` fails on evals and protocol cases whose statistical verdict is
`regression` only; `likely-regression` also on `likely-regression` (which includes a
worse result on a single sample per side — the pre-statistics behaviour); `flaky` on
head evals and cases that passed on some samples and failed on others
(docs/statistics.md).
"""

from __future__ import annotations

from enum import StrEnum

from turncheck.compare.calibration import CalibrationThresholds, calibration_reasons
from turncheck.compare.comparison import Comparison
from turncheck.stats.verdicts import Verdict

NO_CALIBRATION_THRESHOLDS = CalibrationThresholds()


class FailOn(StrEnum):
    INVALID = "invalid"
    FAILURE = "failure"
    REGRESSION = "regression"
    LIKELY_REGRESSION = "likely-regression"
    FLAKY = "flaky"
    COST = "cost"
    CALIBRATION = "calibration"


DEFAULT_FAIL_ON = (FailOn.INVALID, FailOn.FAILURE)


def parse_fail_on(value: str, default: tuple[FailOn, ...] = DEFAULT_FAIL_ON) -> tuple[FailOn, ...]:
    """`invalid,failure` → conditions; empty → `default`; `none` → nothing. Raises ValueError."""
    items = [part.strip() for line in value.splitlines() for part in line.split(",")]
    items = [item for item in items if item]
    if not items:
        return default
    if items == ["none"]:
        return ()
    allowed = [condition.value for condition in FailOn]
    unknown = [item for item in items if item not in allowed]
    if unknown:
        raise ValueError(
            f"unknown condition {', '.join(repr(u) for u in unknown)}; "
            f"expected any of {', '.join(allowed)} (or none)"
        )
    return tuple(dict.fromkeys(FailOn(item) for item in items))


def fail_reasons(
    comparison: Comparison,
    conditions: tuple[FailOn, ...] | set[FailOn],
    *,
    calibration: CalibrationThresholds = NO_CALIBRATION_THRESHOLDS,
) -> list[str]:
    """Why the check fails under `conditions`; empty when it passes.

    `calibration` thresholds apply under `FailOn.CALIBRATION` (see `calibration_reasons`).
    """
    reasons = []
    errors = sum(d.is_error for d in comparison.diagnostics)
    if FailOn.INVALID in conditions and errors:
        reasons.append(f"{errors} validation error(s)")
    if FailOn.FAILURE in conditions and (comparison.failed or comparison.errors):
        reasons.append(f"{comparison.failed} failed and {comparison.errors} errored eval(s)")
    counts = comparison.totals.counts
    reasons += _verdict_reasons(counts.verdicts, counts.flaky, conditions, "eval")
    protocol = comparison.protocols.counts if comparison.protocols is not None else None
    if FailOn.FAILURE in conditions and protocol and (protocol.failed or protocol.errors):
        reasons.append(f"{protocol.failed} failed and {protocol.errors} errored protocol case(s)")
    if protocol is not None:
        reasons += _verdict_reasons(protocol.verdicts, protocol.flaky, conditions,
                                    "protocol case")
    if FailOn.COST in conditions and comparison.alert is not None:
        reasons.append("cost alert: " + "; ".join(comparison.alert.reasons))
    if FailOn.CALIBRATION in conditions:
        reasons += calibration_reasons(comparison.calibration, calibration)
    return reasons


def _any_regression(conditions: tuple[FailOn, ...] | set[FailOn]) -> bool:
    return FailOn.REGRESSION in conditions or FailOn.LIKELY_REGRESSION in conditions


def _verdict_reasons(verdicts: dict[str, int], flaky: int,
                     conditions: tuple[FailOn, ...] | set[FailOn], kind: str) -> list[str]:
    """The verdict conditions for one kind of row (evals, protocol cases)."""
    reasons = []
    proven = verdicts.get(Verdict.REGRESSION.value, 0)
    likely = verdicts.get(Verdict.LIKELY_REGRESSION.value, 0)
    label = "" if kind == "eval" else f" {kind}"
    if _any_regression(conditions) and proven:
        reasons.append(f"{proven}{label} regression(s) against base")
    if FailOn.LIKELY_REGRESSION in conditions and likely:
        reasons.append(f"{likely}{label} likely regression(s) against base")
    if FailOn.FLAKY in conditions and flaky:
        reasons.append(f"{flaky} flaky {kind}(s) (passed on some samples, failed on others)")
    return reasons
