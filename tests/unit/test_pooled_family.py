"""Issue 36 items 1 and 2: against a pooled base the full family (every eval's predictive
null law in the step-down, a suite-level test sharing one drift), and drift estimated
from the two sides when main has a single stored run."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import betaln
from scipy.stats import norm

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
    predictive_test,
    shared_run_variance,
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


def test_an_always_passing_eval_hands_its_predictive_law_to_the_step_down() -> None:
    base = PooledBase(passes=100, samples=100, runs=5)
    test = predictive_test(base, 0.0625, 20, 20, [20])
    # Its least p-value is the predictive chance of 0 passes of 20: B(a, b + 20) / B(a, b)
    # for the Jeffreys posterior (a + b = N + 1) with its mean moved on the logit scale by
    # the run's drift s ~ N(0, 0.0625 (1 + 1/5)), averaged over s.
    mean, size, scale = 100.5 / 101, 101, math.sqrt(0.0625 * 1.2)

    def none_pass(s: float) -> float:
        moved = 1 / (1 + math.exp(-(math.log(mean / (1 - mean)) + s)))
        a, b = moved * size, (1 - moved) * size
        return math.exp(betaln(a, b + 20) - betaln(a, b)) * norm.pdf(s, scale=scale)

    assert math.isclose(test.least_worse, quad(none_pass, -8 * scale, 8 * scale)[0],
                        rel_tol=1e-6)
    assert test.worse == 1.0 and test.worse_null
    assert math.isclose(sum(mass for _, mass in test.worse_null), 1.0, rel_tol=1e-9)
    # Its chance of reaching p <= 0.01 is its law's, well under the bound 0.01.
    reach = sum(mass for p, mass in test.worse_null if p <= 0.01)
    assert reach < 0.002


def test_stable_pooled_evals_cost_the_changed_one_almost_nothing() -> None:
    stable = predictive_test(PooledBase(100, 100, 5), 0.0, 20, 20, [20])
    dropped = predictive_test(PooledBase(90, 100, 5), 0.0, 13, 20, [20])
    tests = [dropped, *[stable] * 19]
    with_laws = discrete_holm([t.worse for t in tests], [t.worse_null for t in tests],
                              [t.least_worse for t in tests], [True] * 20)
    bound_only = discrete_holm([t.worse for t in tests], [()] * 20,
                               [t.least_worse for t in tests], [True] * 20)
    assert with_laws[0] < 0.05 < bound_only[0]


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
    stopped = [PooledHead(10, 10, (10, 20))] * 10
    assert pooled_suite_test(bases, stopped, 0.0).better < 0.5 < pooled_suite_test(
        bases, stopped, 0.0).worse


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
