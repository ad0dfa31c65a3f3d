"""Issue 45 item 1: the live default path (one sample per side, the base from main's
stored runs) keeps the default gate's level on identical pull requests, whatever the
evals' pass rate: exact enumeration through the pooled suite-level test and the decision.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

import pytest

from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, fail_reasons
from turncheck.compare.pool import pool_reports
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage
from turncheck.stats.drift import two_run_variance
from turncheck.stats.pooled import PooledBase, PooledHead, pooled_suite_test
from turncheck.stats.verdicts import Verdict, decide, suite_evidence

PRICES = PriceSource(library="genai-prices", version="t", timestamp="2026-01-01T00:00:00Z")
EVALS = 20
NEGLIGIBLE = 1e-7
"""Outcomes less likely than this are not enumerated; their mass is counted as failed."""


def single(name: str, passed: bool) -> EvalResult:
    return EvalResult(name=name, prompt=f"prompt of {name}",
                      status=Status.PASS if passed else Status.FAIL,
                      passed_on_turn=1 if passed else None, error=None, usage=Usage(),
                      cost_usd=0.0, judge_usage=Usage(), judge_cost_usd=None)


def report(outcomes: list[bool], commit: str, run: str) -> Report:
    suite = SuiteResult(path="s.eval.yaml", name="s", model="m", provider="openai",
                        cassette=None,
                        evals=[single(f"e{i}", o) for i, o in enumerate(outcomes)])
    return Report(turncheck_version="t", mode="live", price_source=PRICES, suites=[suite],
                  started_at="2026-01-01T00:00:00Z", duration_s=0.0, commit=commit,
                  run_id=run)


def gate_fails(base: list[bool], head: list[bool], shared: float | None) -> bool:
    """The default gate of the live path as `compare_reports` decides it against a pooled
    base of one stored run of one sample per eval (`shared`: the shared drift the stored
    history shows; None with one stored run, whose drift comes from the two sides)."""
    bases = [PooledBase(int(b), 1, 1) for b in base]
    heads = [PooledHead(int(h), 1, (1,)) for h in head]
    variance = two_run_variance([((int(b), 1), (int(h), 1)) for b, h in zip(base, head,
                                                                            strict=True)]) \
        if shared is None else 0.0
    strata = [([1] if b else [None], [1] if h else [None]) for b, h in zip(base, head,
                                                                          strict=True)]
    evidence = replace(suite_evidence(strata),
                       test=pooled_suite_test(bases, heads, variance, shared))
    return decide([evidence])[0].verdict is Verdict.REGRESSION


def identical_pr_fail_rate(rate: float, shared: float | None) -> float:
    """P(the default gate fails) over every way 20 evals at `rate` can fall at base and
    head (one sample each): outcomes (both pass, both fail, broke, fixed) multinomial."""
    chances = (rate * rate, (1 - rate) ** 2, rate * (1 - rate), rate * (1 - rate))
    failed = 0.0
    for both in range(EVALS + 1):
        for neither in range(EVALS + 1 - both):
            for broke in range(EVALS + 1 - both - neither):
                fixed = EVALS - both - neither - broke
                counts = (both, neither, broke, fixed)
                ways = math.factorial(EVALS) / math.prod(math.factorial(c) for c in counts)
                chance = ways * math.prod(p ** c for p, c in zip(chances, counts, strict=True))
                if chance < NEGLIGIBLE:
                    failed += chance
                    continue
                failed += chance * outcome_fails(counts, shared)
    return failed


@cache
def outcome_fails(counts: tuple[int, int, int, int], shared: float | None) -> bool:
    """`gate_fails` of one outcome (both passed, neither, broke, fixed): the same for
    every pass rate, so each is decided once for the rates enumerated."""
    both, neither, broke, fixed = counts
    base = [True] * both + [False] * neither + [True] * broke + [False] * fixed
    head = [True] * both + [False] * neither + [False] * broke + [True] * fixed
    return gate_fails(base, head, shared)


@pytest.mark.parametrize("rate", [0.3, 0.4, 0.5])
def test_identical_live_prs_against_one_stored_run_fail_at_most_five_percent(rate: float
                                                                             ) -> None:
    # Before: the predictive law took one base sample for a rate of 0.75 or 0.25 and
    # the two sides showed no drift: 22.5 % / 13.1 % / 6.7 % at 0.3 / 0.4 / 0.5.
    assert identical_pr_fail_rate(rate, shared=None) <= 0.05


def per_history_fail_rates(rate: float, shared: float | None) -> list[tuple[float, float]]:
    """For each stored base run (k of the 20 evals passed): its chance, and the chance
    that an identical PR fails the default gate against it. The outcomes are those of
    `identical_pr_fail_rate` (a history's and a head's chance multiply to theirs), so
    each is decided once."""
    found = []
    for passed in range(EVALS + 1):
        history = math.comb(EVALS, passed) * rate ** passed * (1 - rate) ** (EVALS - passed)
        failed = 0.0
        for broke in range(passed + 1):
            for fixed in range(EVALS - passed + 1):
                counts = (passed - broke, EVALS - passed - fixed, broke, fixed)
                chance = history * math.comb(passed, broke) * (1 - rate) ** broke \
                    * rate ** (passed - broke) * math.comb(EVALS - passed, fixed) \
                    * rate ** fixed * (1 - rate) ** (EVALS - passed - fixed)
                failed += chance if chance < NEGLIGIBLE else chance * outcome_fails(counts,
                                                                                   shared)
        found.append((history, failed / history))
    return found


@pytest.mark.parametrize("rate", [0.3, 0.4, 0.5])
def test_one_stored_run_pushes_identical_prs_over_ten_percent_in_few_histories(rate: float
                                                                               ) -> None:
    # Issue 45 item 4: main's stored run held fixed, the share of identical PRs failing
    # against it; exact: 0.51 % / 0.16 % / 0.59 % of histories fail more than 10 % of
    # PRs (at 0.3 / 0.4 / 0.5), the goal is at most 5 %.
    histories = per_history_fail_rates(rate, shared=None)
    assert sum(chance for chance, failed in histories if failed > 0.10) <= 0.05


@pytest.mark.parametrize("rate", [0.3, 0.4, 0.5])
def test_identical_live_prs_against_a_calm_history_fail_at_most_five_percent(rate: float
                                                                             ) -> None:
    # A history that shows no shared drift: the conditional law alone, no margin.
    assert identical_pr_fail_rate(rate, shared=0.0) <= 0.05


def test_the_enumeration_decides_as_compare_reports_does() -> None:
    base = [True] * 6 + [False] * 4 + [True] * 9 + [False]
    head = [True] * 6 + [False] * 4 + [False] * 9 + [True]
    pooled, pool = pool_reports([report(base, "b", "main-run")])
    comparison = compare_reports(pooled, report(head, "h", "pr-run"), base_pool=pool)
    assert bool(fail_reasons(comparison, DEFAULT_FAIL_ON)) == gate_fails(base, head, None)
    calm = report(base, "earlier", "older-run")
    pooled, pool = pool_reports([report(base, "b", "main-run"), calm])
    comparison = compare_reports(pooled, report(head, "h", "pr-run"), base_pool=pool)
    assert pool.shared_variance == 0.0
    assert bool(fail_reasons(comparison, DEFAULT_FAIL_ON)) == gate_fails(base, head, 0.0)


def test_twenty_evals_that_broke_still_fail_the_live_default_gate() -> None:
    base, head = [True] * EVALS, [False] * EVALS
    pooled, pool = pool_reports([report(base, "b", "main-run")])
    comparison = compare_reports(pooled, report(head, "h", "pr-run"), base_pool=pool)
    assert fail_reasons(comparison, DEFAULT_FAIL_ON)


def test_the_comment_says_when_the_verdict_rests_on_one_stored_run_and_how_to_do_better(
) -> None:
    base, head = [True] * 10 + [False] * 10, [True] * 9 + [False] * 11
    pooled, pool = pool_reports([report(base, "b", "main-run"),
                                 report(base, "earlier", "older-run")])
    head_report = report(head, "h", "pr-run")
    body = comment_markdown(compare_reports(pooled, head_report, base_pool=pool),
                          CommentContext(fail_reasons=[], head=head_report, base=pooled))
    assert "Verdicts rest on one stored run of main" in body
    assert "turncheck workflow again on the base commit" in body
    pooled, pool = pool_reports([report(base, "b", "main-run"), report(base, "b", "rerun")])
    body = comment_markdown(compare_reports(pooled, head_report, base_pool=pool),
                          CommentContext(fail_reasons=[], head=head_report, base=pooled))
    assert "one stored run" not in body
