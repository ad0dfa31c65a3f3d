"""Issue 36 items 1 and 2: against a pooled base the full family (every eval's predictive
null law in the step-down, a suite-level test sharing one drift), and drift estimated
from the two sides when main has a single stored run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from turncheck.compare.comparison import compare_reports
from turncheck.compare.pool import pool_reports
from turncheck.engine.repeats import RepeatPlan, combine
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage
from turncheck.stats.drift import (
    MIN_OTHER_EVALS,
    two_run_variance,
    two_run_variances_without,
)
from turncheck.stats.multiplicity import discrete_holm
from turncheck.stats.pooled import (
    PooledBase,
    PooledHead,
    pooled_suite_test,
    shared_run_variance,
    two_stage_test,
)
from turncheck.stats.verdicts import Verdict

PRICES = PriceSource(library="genai-prices", version="t", timestamp="2026-01-01T00:00:00Z")


def repeated(name: str, passes: int, samples: int) -> EvalResult:
    outcomes = [EvalResult(name=name, prompt=f"prompt of {name}",
                           status=Status.PASS if i < passes else Status.FAIL,
                           passed_on_turn=1 if i < passes else None, error=None,
                           usage=Usage(), cost_usd=0.0, judge_usage=Usage(),
                           judge_cost_usd=None) for i in range(samples)]
    return combine(outcomes, RepeatPlan(samples, samples, None), 1)


def report(evals: list[EvalResult], commit: str) -> Report:
    suite = SuiteResult(path="s.eval.yaml", name="s", model="m", provider="openai",
                        cassette=None, evals=evals)
    return Report(turncheck_version="t", mode="live", price_source=PRICES, suites=[suite],
                  started_at="2026-01-01T00:00:00Z", duration_s=0.0, commit=commit)


def test_an_always_passing_eval_cannot_reach_a_small_p_value_against_its_base() -> None:
    # Given 120 passes of 120 over both sides, the head passed every sample whatever
    # happened: its law has one result, so it costs the step-down nothing.
    test = two_stage_test(PooledBase(passes=100, samples=100, runs=5), 0.0625, 20, 20, [20])
    assert test.worse == 1.0 and test.least_worse == 1.0
    assert [p for p, _ in test.worse_null] == [1.0]


@pytest.mark.parametrize("rate", [0.3, 0.5, 0.8, 0.95])
def test_a_two_stage_head_keeps_its_level_for_any_fixed_pass_rate(rate: float) -> None:
    """Every way a base run of 20 samples and a `repeat: auto` head (a first look of 10,
    stopped when it all passed or all failed, else topped up by 20) can fall at one fixed
    pass rate, enumerated: the head's test rejects at level a with chance at most a."""
    found: dict[tuple[int, int, int], float] = {}

    def p_worse(base: int, passes: int, samples: int) -> float:
        key = (base, passes, samples)
        if key not in found:
            found[key] = two_stage_test(PooledBase(base, 20, 1), 0.0, passes, samples,
                                        [10, 20]).worse
        return found[key]

    rejected = dict.fromkeys((0.01, 0.05, 0.1), 0.0)
    for base in range(21):
        for first in range(11):
            chance = binom.pmf(base, 20, rate) * binom.pmf(first, 10, rate)
            heads = [(first, 10, 1.0)] if first in (0, 10) else \
                [(first + more, 30, binom.pmf(more, 20, rate)) for more in range(21)]
            for passes, samples, weight in heads:
                p = p_worse(base, passes, samples)
                for level in rejected:
                    rejected[level] += chance * weight * (p <= level)
    assert all(rejected[level] <= level for level in rejected), rejected
    if rate <= 0.8:  # not trivially conservative (at 0.95 few results are attainable)
        assert rejected[0.1] > 0.03


def test_stable_pooled_evals_cost_the_changed_one_nothing() -> None:
    # Given their pooled passes, always-passing evals can only have passed every head
    # sample: the step-down adjusts the dropped eval's p-value by nothing.
    stable = two_stage_test(PooledBase(100, 100, 5), 0.0, 20, 20, [20])
    dropped = two_stage_test(PooledBase(90, 100, 5), 0.0, 13, 20, [20])
    tests = [dropped, *[stable] * 19]
    adjusted = discrete_holm([t.worse for t in tests], [t.worse_null for t in tests],
                             [t.least_worse for t in tests], [True] * 20)
    assert math.isclose(adjusted[0], dropped.worse, rel_tol=1e-9) and adjusted[0] < 0.01


def test_the_drift_of_one_base_run_against_one_head_run_is_recovered() -> None:
    rng = np.random.default_rng(36)
    rates = rng.uniform(0.6, 0.95, 3000)
    logits = np.log(rates / (1 - rates))
    sides = [1 / (1 + np.exp(-(logits + 0.5 * rng.standard_normal(3000))))
             for _ in range(2)]
    pairs = [((int(rng.binomial(40, b)), 40), (int(rng.binomial(40, h)), 40))
             for b, h in zip(*sides, strict=True)]
    assert 0.19 < two_run_variance(pairs) < 0.31  # sigma² = 0.25
    steady = [((int(rng.binomial(40, r)), 40), (int(rng.binomial(40, r)), 40)) for r in rates]
    assert two_run_variance(steady) < 0.03


def test_the_suite_test_finds_a_diffuse_drop_and_widens_with_drift() -> None:
    rng = np.random.default_rng(7)
    bases = [PooledBase(int(rng.binomial(100, 0.95)), 100, 5) for _ in range(20)]
    dropped = [PooledHead(int(rng.binomial(20, 0.85)), 20, (20,)) for _ in range(20)]
    steady = [PooledHead(int(rng.binomial(20, 0.95)), 20, (20,)) for _ in range(20)]
    assert pooled_suite_test(bases, dropped, 0.0).worse < 0.001
    assert pooled_suite_test(bases, steady, 0.0).worse > 0.05
    assert pooled_suite_test(bases, dropped, 0.25).worse > pooled_suite_test(
        bases, dropped, 0.0).worse
    law = pooled_suite_test(bases, dropped, 0.0625).worse_null
    assert math.isclose(sum(mass for _, mass in law), 1.0, rel_tol=1e-9)


def test_a_two_stage_head_in_the_suite_test_counts_its_first_look_stops() -> None:
    bases = [PooledBase(95, 100, 5)] * 10
    failed = [PooledHead(0, 10, (10, 20))] * 10
    passed = [PooledHead(10, 10, (10, 20))] * 10
    # Every first look failing against a base passing 95 % of the time is a drop; every
    # first look passing was, given the pooled passes and the stop, the only result.
    assert pooled_suite_test(bases, failed, 0.0).worse < 1e-6
    assert pooled_suite_test(bases, passed, 0.0).worse == 1.0


def suite_runs(rates: list[int], commit: str) -> list[Report]:
    return [report([repeated(f"e{i}", r, 20) for i, r in enumerate(rates)], commit)
            for _ in range(5)]


def test_compare_on_a_pooled_base_reports_a_diffuse_drop_as_a_suite_regression() -> None:
    pooled, pool = pool_reports(suite_runs([19] * 20, "base"), base_commit="base")
    head = report([repeated(f"e{i}", 17, 20) for i in range(20)], "head")
    comparison = compare_reports(pooled, head, base_pool=pool)
    [suite] = comparison.suites
    assert all(e.verdict is not Verdict.REGRESSION for e in suite.evals)
    assert suite.verdict is Verdict.REGRESSION and suite.p_value is not None
    assert suite.p_value <= 0.05 and suite.pass_rate_change == -0.1
    assert comparison.model_dump(mode="json")["suites"][0]["verdict"] == "regression"
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=head, base=pooled))
    assert "**suite s**" in body and "down 10.0 points on average over its 20 evals" in body
    steady = report([repeated(f"e{i}", 19, 20) for i in range(20)], "head")
    assert compare_reports(pooled, steady, base_pool=pool).suites[0].verdict \
        is Verdict.UNCHANGED


def test_one_stored_run_of_main_takes_its_drift_from_the_two_sides() -> None:
    base_run = report([repeated(f"e{i}", 18, 20) for i in range(20)], "base")
    pooled, pool = pool_reports([base_run], base_commit="base")
    assert pool.history_runs == 1 and pool.drift_variance == 0.0
    apart = [20 if i % 2 else 14 for i in range(20)]  # runs far apart, eval by eval
    head = report([repeated(f"e{i}", r, 20) for i, r in enumerate(apart)], "head")
    comparison = compare_reports(pooled, head, base_pool=pool)
    assert comparison.drift_sigma is not None and comparison.drift_sigma > 0.5


def test_the_shared_part_of_the_drift_is_told_from_each_evals_own() -> None:
    rng = np.random.default_rng(5)
    rates = np.array([0.95] * 10 + [0.9] * 10 + [0.8] * 10)
    logits = np.log(rates / (1 - rates))

    def history(shared: float, own: float) -> list[list[tuple[int, int]]]:
        shifts = shared * rng.standard_normal(8)[:, None] + own * rng.standard_normal((8, 30))
        chances = 1 / (1 + np.exp(-(logits[None, :] + shifts)))
        drawn = rng.binomial(50, chances)
        return [[(int(drawn[k, i]), 50) for k in range(8)] for i in range(30)]

    shared = np.mean([shared_run_variance(history(0.5, 0.0)) for _ in range(40)])
    own_only = np.mean([shared_run_variance(history(0.0, 0.5)) for _ in range(40)])
    assert 0.15 < shared < 0.35  # sigma_s² = 0.25
    assert own_only < 0.05
    assert shared_run_variance([[(9, 10)], [(5, 10)]]) == 0.0  # one run: no estimate


@given(st.lists(st.tuples(st.tuples(st.integers(0, 20), st.just(20)),
                          st.sampled_from([0, 5, 20]).flatmap(
                              lambda n: st.tuples(st.integers(0, n), st.just(n)))),
                min_size=1, max_size=30))
def test_every_evals_leave_one_out_drift_at_once_is_each_computed_alone(
        pairs: list[tuple[tuple[int, int], tuple[int, int]]]) -> None:
    """The linear form `compare` uses gives each eval the drift of the others, as
    recomputing it without that eval does (a head with no usable sample included)."""
    together = two_run_variances_without(pairs)
    for index, found in enumerate(together):
        others = [pair for at, pair in enumerate(pairs) if at != index]
        informative = sum(0 < base[0] + head[0] < base[1] + head[1] for base, head in others)
        alone = None if informative < MIN_OTHER_EVALS else two_run_variance(others)
        assert (found is None) == (alone is None)
        if found is not None and alone is not None:
            assert abs(found - alone) <= 1e-9 * max(1.0, abs(alone))
