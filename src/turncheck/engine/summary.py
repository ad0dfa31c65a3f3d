"""Sums over evals and suites, shared by runs and merged shard reports."""

from __future__ import annotations

from turncheck.report.results import Status
from turncheck.report.run import EvalResult, SuiteResult, Totals
from turncheck.report.spend import spend_totals


def with_suite_totals(suite: SuiteResult, evals: list[EvalResult]) -> SuiteResult:
    """`suite` holding `evals`, its usage and cost summed from them."""
    return suite.model_copy(update={"evals": evals, **spend_totals(evals)})


def run_totals(suites: list[SuiteResult], unpriced: set[str]) -> Totals:
    evals = [e for s in suites for e in s.evals]
    return Totals(
        evals=len(evals),
        passed=sum(e.status is Status.PASS for e in evals),
        failed=sum(e.status is Status.FAIL for e in evals),
        errors=sum(e.status is Status.ERROR for e in evals),
        skipped=sum(e.status is Status.SKIPPED for e in evals),
        unpriced_models=sorted(unpriced),
    ).model_copy(update=spend_totals(suites))
