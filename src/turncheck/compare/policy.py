"""The `fail-on` policy: which findings fail the check (and the CLI's exit code).

- `invalid`: validation errors.
- `error`: infrastructure trouble: head evals/cases that errored, or rows that could
  not be judged because too many samples errored (a provider down is not a model
  regression).
- `failure`: head evals/cases that failed (not errored, not skipped).
- `regression`: the statistical verdict `regression` (rows and suites, family-wise
  error ≤ α).
- `broken`, `later-turn`: transitions of rows with one sample per side, where one
  sample is evidence: in replay (the recorded answers are what is compared, so a
  transition is a real change of them). In live and record runs a single sample per
  side is one draw of a flaky model: the transition is shown but gates only under
  `likely-regression`; a drop over many evals is still a suite-level `regression`.
- `likely-regression`: also `likely-regression`, `broken` and `later-turn` (a watch tier:
  unadjusted, it fires on noise).
- `flaky`: head rows that passed on some samples and failed on others.
- `budget`: head rows a budget stopped (not run). Off by default: without it a budget
  stop makes the check `neutral` (grey), never `success` (docs/budgets.md).

The default (`DEFAULT_FAIL_ON`, the action's and `turncheck compare`'s) is
`invalid,error,regression,broken`: in every mode and at every sample count, none of
these trips on identical base and head more often than α (docs/statistics.md).
"""

from __future__ import annotations

from enum import StrEnum

from turncheck.compare.calibration import calibration_reasons
from turncheck.compare.rows import family_counts
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import Comparison, CostThresholds, LatencyComparison
from turncheck.report.rows import RowCounts, SampleSide
from turncheck.stats.verdicts import Verdict
from turncheck.text.counts import counted

NO_CALIBRATION_THRESHOLDS = CalibrationThresholds()


class FailOn(StrEnum):
    INVALID = "invalid"
    ERROR = "error"
    FAILURE = "failure"
    REGRESSION = "regression"
    BROKEN = "broken"
    LATER_TURN = "later-turn"
    LIKELY_REGRESSION = "likely-regression"
    FLAKY = "flaky"
    BUDGET = "budget"
    COST = "cost"
    CALIBRATION = "calibration"
    LATENCY = "latency"


class FailReason(str):
    """Why the check fails, as text, with the condition that fired: the heading names
    what fails the check from it."""

    condition: FailOn

    def __new__(cls, text: str, condition: FailOn) -> FailReason:
        made = super().__new__(cls, text)
        made.condition = condition
        return made


Conditions = tuple[FailOn, ...] | set[FailOn]
DEFAULT_FAIL_ON = (FailOn.INVALID, FailOn.ERROR, FailOn.REGRESSION, FailOn.BROKEN)


def parse_fail_on(value: str, default: tuple[FailOn, ...] = DEFAULT_FAIL_ON) -> tuple[FailOn, ...]:
    """`invalid,error` → conditions; empty → `default`; `none` → nothing. Raises ValueError."""
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
    conditions: Conditions,
    *,
    calibration: CalibrationThresholds = NO_CALIBRATION_THRESHOLDS,
) -> list[str]:
    """Why the check fails under `conditions`; empty when it passes.

    `calibration` thresholds apply under `FailOn.CALIBRATION` (see `calibration_reasons`).
    """
    reasons: list[str] = []
    errors = sum(d.is_error for d in comparison.diagnostics)
    if FailOn.INVALID in conditions and errors:
        reasons.append(FailReason(counted(errors, "validation error"), FailOn.INVALID))
    rows = [(kind.counts, kind.kind.noun) for kind in family_counts(comparison)]
    if FailOn.ERROR in conditions:
        reasons += [FailReason(_error_reason(c, kind), FailOn.ERROR)
                    for c, kind in rows if _infrastructure(c)]
    if FailOn.FAILURE in conditions:
        reasons += [FailReason(counted(c.failed, f"failed {kind}"), FailOn.FAILURE)
                    for c, kind in rows if c.failed]
    if FailOn.BUDGET in conditions:
        reasons += [FailReason(f"{counted(not_run(c), kind)} not run (a budget stopped them)",
                               FailOn.BUDGET) for c, kind in rows if not_run(c)]
    reasons += _suite_reasons(comparison, conditions)
    evidence = one_sample_is_evidence(comparison)
    for found, kind in rows:
        reasons += _verdict_reasons(found.verdicts, found.flaky, conditions, kind, evidence)
    if FailOn.COST in conditions and comparison.alert is not None:
        reasons.append(FailReason("cost alert: " + "; ".join(comparison.alert.reasons),
                                  FailOn.COST))
    if FailOn.CALIBRATION in conditions:
        reasons += [FailReason(r, FailOn.CALIBRATION)
                    for r in calibration_reasons(comparison.calibration, calibration)]
    if FailOn.LATENCY in conditions:
        reasons += [FailReason(latency_reason(suite.name, suite.latency, comparison.thresholds),
                               FailOn.LATENCY)
                    for suite in comparison.suites
                    if suite.latency is not None and suite.latency.slower]
    return reasons


def latency_reason(name: str, latency: LatencyComparison, thresholds: CostThresholds) -> str:
    """`latency: refund-desk's replies slower by more than 20% (median 1,210 → 1,530 ms,
    p=0.0004 over 40 and 40 turns)`."""
    return (f"latency: {name}'s replies slower by more than "
            f"{thresholds.latency_percent or 0:g}% (median {latency.base.total_p50_ms:,.0f} → "
            f"{latency.head.total_p50_ms:,.0f} ms, p={latency.p_value:.2g} over "
            f"{latency.base.turns} and {latency.head.turns} turns)")


def not_run(counts: RowCounts) -> int:
    """Rows a budget stopped at head, or left unjudged for a budget."""
    return max(counts.skipped, counts.unjudged.get("budget", 0) + counts.unjudged.get("skipped", 0))


def incomplete(comparison: Comparison) -> bool:
    """Some evals or cases were not run (a budget stopped them): the check cannot vouch
    for them, so it is never `success` (neutral when nothing else fails it)."""
    return any(not_run(kind.counts) for kind in family_counts(comparison))


def _infrastructure(counts: RowCounts) -> int:
    """Rows with infrastructure trouble: errored at head, or unjudged for errors."""
    return max(counts.errors, counts.unjudged.get("errors", 0))


def _error_reason(counts: RowCounts, kind: str) -> str:
    return f"{counted(_infrastructure(counts), kind)} errored (infrastructure, not a verdict)"


def _suite_reasons(comparison: Comparison, conditions: Conditions) -> list[str]:
    if not _any_regression(conditions):
        return []
    worse = [s.name for s in comparison.suites if s.verdict is Verdict.REGRESSION]
    suites = counted(len(worse), "suite")
    return [FailReason(f"suite-level regression of {suites}: {', '.join(worse)}",
                       FailOn.REGRESSION)] if worse else []


def _any_regression(conditions: Conditions) -> bool:
    return FailOn.REGRESSION in conditions or FailOn.LIKELY_REGRESSION in conditions


SAMPLE_IS_EVIDENCE = frozenset({"replay"})
"""Modes whose answers are the recorded ones, the same on every run: one sample per
side is then the behaviour compared, not one draw of it."""


def one_sample_is_evidence(comparison: Comparison) -> bool:
    """Whether a one-sample transition (`broken`, `later-turn`) is a fact about the
    behaviour compared (replay) rather than one draw of a flaky model (live, record)."""
    return comparison.mode in SAMPLE_IS_EVIDENCE


def one_sample_rows(comparison: Comparison) -> int:
    """Eval and protocol-case rows compared on one usable sample per side."""
    sides: list[tuple[SampleSide | None, SampleSide | None]] = [
        *((e.base, e.head) for s in comparison.suites for e in s.evals),
        *((c.base, c.head) for s in (comparison.protocols.suites if comparison.protocols
                                     else []) for c in s.cases)]
    return sum(1 for base, head in sides if base is not None and head is not None
               and base.samples == 1 and head.samples == 1)


def one_sample_note(comparison: Comparison) -> str | None:
    """One sentence on what a one-sample comparison can and cannot prove; None when
    no row was compared on one sample per side."""
    if not one_sample_rows(comparison):
        return None
    if one_sample_is_evidence(comparison):
        return ("One sample per side in replay compares the recorded answers, so a broken "
                "eval is a real change of them, but it cannot say how often a live model "
                "fails.")
    return ("One sample per side shows which answers changed but cannot prove a "
            "regression (a flaky eval flips by chance), so broken evals do not fail the "
            "check here; repeats (`repeat: 5` or `auto`) can.")


TRANSITION_GATES = ((FailOn.BROKEN, Verdict.BROKEN, "broke"),
                    (FailOn.LATER_TURN, Verdict.LATER_TURN, "passed on a later turn"))


def _verdict_reasons(verdicts: dict[str, int], flaky: int, conditions: Conditions,
                     kind: str, one_sample_evidence: bool) -> list[str]:
    """The verdict conditions for one kind of row (evals, protocol cases); one-sample
    transitions gate under their own condition only where one sample is evidence."""
    reasons: list[str] = []
    proven = verdicts.get(Verdict.REGRESSION.value, 0)
    likely = verdicts.get(Verdict.LIKELY_REGRESSION.value, 0)
    label = "" if kind == "eval" else f"{kind} "
    if _any_regression(conditions) and proven:
        reasons.append(FailReason(f"{counted(proven, label + 'regression')} against base",
                                  FailOn.REGRESSION))
    if FailOn.LIKELY_REGRESSION in conditions and likely:
        reasons.append(FailReason(f"{counted(likely, label + 'likely regression')} against base",
                                  FailOn.LIKELY_REGRESSION))
    watch = FailOn.LIKELY_REGRESSION in conditions
    for gate, verdict, said in TRANSITION_GATES:
        found = verdicts.get(verdict.value, 0)
        if found and ((gate in conditions and one_sample_evidence) or watch):
            reasons.append(FailReason(f"{counted(found, kind)} {said} (one sample per side)", gate))
    if FailOn.FLAKY in conditions and flaky:
        reasons.append(FailReason(
            f"{counted(flaky, 'flaky ' + kind)} (passed on some samples, failed on others)",
            FailOn.FLAKY))
    return reasons
