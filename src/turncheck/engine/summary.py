"""Sums over evals and suites, shared by runs and merged shard reports."""

from __future__ import annotations

from turncheck.engine.pricing import add_costs
from turncheck.engine.report import EvalResult, Status, SuiteResult, Totals, Usage


def with_suite_totals(suite: SuiteResult, evals: list[EvalResult]) -> SuiteResult:
    """`suite` holding `evals`, its usage and cost summed from them."""
    return suite.model_copy(
        update={
            "evals": evals,
            "usage": sum((e.usage for e in evals), Usage()),
            "cost_usd": add_costs([e.cost_usd for e in evals]),
            "judge_usage": sum((e.judge_usage for e in evals), Usage()),
            "judge_cost_usd": add_costs([e.judge_cost_usd for e in evals]),
        }
    )


def run_totals(suites: list[SuiteResult], unpriced: set[str]) -> Totals:
    evals = [e for s in suites for e in s.evals]
    return Totals(
        evals=len(evals),
        passed=sum(e.status is Status.PASS for e in evals),
        failed=sum(e.status is Status.FAIL for e in evals),
        errors=sum(e.status is Status.ERROR for e in evals),
        skipped=sum(e.status is Status.SKIPPED for e in evals),
        usage=sum((s.usage for s in suites), Usage()),
        cost_usd=add_costs([s.cost_usd for s in suites]),
        judge_usage=sum((s.judge_usage for s in suites), Usage()),
        judge_cost_usd=add_costs([s.judge_cost_usd for s in suites]),
        unpriced_models=sorted(unpriced),
    )
