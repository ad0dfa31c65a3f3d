"""Sentences about hard budgets, shared by the console, the comment and the check run."""

from __future__ import annotations

from turncheck.report.results import Status
from turncheck.report.run import BudgetOutcome, Report
from turncheck.text.counts import counted


def _limit(budget: BudgetOutcome) -> str:
    parts = []
    if budget.max_cost_usd is not None:
        parts.append(f"${budget.spent_usd:.4f} of ${budget.max_cost_usd:g}")
    if budget.max_live_tokens is not None:
        parts.append(f"{budget.spent_tokens:,} of {budget.max_live_tokens:,} tokens")
    return " and ".join(parts)


def _scope(budget: BudgetOutcome) -> str:
    return "the run's budget" if budget.scope == "run" else f"the budget of {budget.scope}"


def skipped_count(report: Report) -> int:
    return sum(e.status is Status.SKIPPED for s in report.suites for e in s.evals)


def budget_lines(report: Report) -> list[str]:
    """One line per budget: spent of it, and whether it stopped the run."""
    lines = []
    for budget in report.budgets:
        if budget.stopped:
            skipped = skipped_count(report)
            evals = f", {counted(skipped, 'eval')} skipped (budget)" if skipped else ""
            lines.append(
                f"Budget stopped the run: {_scope(budget)} — spent {_limit(budget)}; "
                f"{counted(budget.refused_calls, 'live call')} not sent{evals}."
            )
        else:
            lines.append(f"Budget: {_scope(budget)} — spent {_limit(budget)}.")
    return lines

