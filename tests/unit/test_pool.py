"""Issue 22 item 6: a base pooled from several trusted runs of main, drift accounted for."""

from __future__ import annotations

import numpy as np

from turncheck.compare.comparison import compare_reports
from turncheck.compare.pool import pool_reports
from turncheck.engine.repeats import RepeatPlan, combine
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage
from turncheck.stats.pooled import between_run_variance
from turncheck.stats.verdicts import Verdict

PRICES = PriceSource(library="genai-prices", version="t", timestamp="2026-01-01T00:00:00Z")


def one_sample(name: str, prompt: str, passed: bool) -> EvalResult:
    return EvalResult(name=name, prompt=prompt, status=Status.PASS if passed else Status.FAIL,
                      passed_on_turn=1 if passed else None, error=None, usage=Usage(),
                      cost_usd=0.0, judge_usage=Usage(), judge_cost_usd=None)


def repeated(name: str, passes: int, samples: int, prompt: str | None = None) -> EvalResult:
    outcomes = [one_sample(name, prompt or f"prompt of {name}", i < passes)
                for i in range(samples)]
    return combine(outcomes, RepeatPlan(samples, samples, None), 1)


def report(evals: list[EvalResult], commit: str) -> Report:
    suite = SuiteResult(path="s.eval.yaml", name="s", model="m", provider="openai",
                        cassette=None, evals=evals)
    return Report(turncheck_version="t", mode="live", price_source=PRICES, suites=[suite],
                  started_at="2026-01-01T00:00:00Z", duration_s=0.0, commit=commit)


def test_pooling_merges_only_evals_of_the_same_identity_and_commit() -> None:
    first = report([repeated("x", 9, 10), repeated("y", 10, 10)], "base")
    second = report([repeated("x", 7, 10), repeated("y", 3, 10, prompt="another prompt"),
                     repeated("z", 5, 10)], "base")
    older = report([repeated("x", 2, 10)], "older")
    pooled, pool = pool_reports([first, second, older], base_commit="base")
    [suite] = pooled.suites
    x, y = suite.evals  # z is not in the reference run: not added
    assert [e.name for e in suite.evals] == ["x", "y"]
    assert x.repeats is not None and (x.repeats.passes, x.repeats.samples) == (16, 20)
    assert y.repeats is not None and (y.repeats.passes, y.repeats.samples) == (10, 10)
    assert pool.runs == 2 and pool.history_runs == 3
    assert pool.runs_of("s.eval.yaml", "x") == [(9, 10), (7, 10)]
    assert pool.runs_of("s.eval.yaml", "y") == [(10, 10)]


def synthetic_history(sigma: float, seed: int) -> list[list[tuple[int, int]]]:
    """30 evals of rates 0.6..0.95, 8 runs of 50 samples, each run with its own drift."""
    rng = np.random.default_rng(seed)
    rates = np.linspace(0.6, 0.95, 30)
    shifts = rng.standard_normal(8) * sigma
    history = []
    for rate in rates:
        logit = np.log(rate / (1 - rate))
        chances = 1 / (1 + np.exp(-(logit + shifts)))
        history.append([(int(rng.binomial(50, c)), 50) for c in chances])
    return history


def test_the_drift_estimate_recovers_the_run_level_variance_of_a_synthetic_history() -> None:
    drifting = [between_run_variance(synthetic_history(0.5, seed)) for seed in range(20)]
    steady = [between_run_variance(synthetic_history(0.0, seed)) for seed in range(20)]
    assert 0.15 < float(np.mean(drifting)) < 0.35  # sigma² = 0.25
    assert float(np.mean(steady)) < 0.02
    assert between_run_variance([[(10, 10), (10, 10)], [(0, 5)]]) == 0.0  # no information


def base_runs(counts: list[int], commit: str = "base") -> list[Report]:
    return [report([repeated("x", c, 20)], commit) for c in counts]


def test_a_drop_against_a_steady_pooled_base_is_a_regression_but_not_against_a_drifting_one(
) -> None:
    head = report([repeated("x", 12, 20)], "head")
    steady, steady_pool = pool_reports(base_runs([18, 18, 19, 18, 17]), base_commit="base")
    drifting, drifting_pool = pool_reports(base_runs([20, 20, 8, 20, 20]), base_commit="base")
    found = compare_reports(steady, head, base_pool=steady_pool)
    assert found.suites[0].evals[0].verdict is Verdict.REGRESSION
    assert found.pooled_runs == 5 and found.baseline_note is None
    # Similar pooled rate, but one run of main fell to 8/20: a new run may too.
    against_drift = compare_reports(drifting, head, base_pool=drifting_pool)
    assert against_drift.suites[0].evals[0].verdict is not Verdict.REGRESSION
    # Without the pool the same samples are one big base: a regression.
    assert compare_reports(drifting, head).suites[0].evals[0].verdict is Verdict.REGRESSION


def test_a_drifting_or_stale_baseline_gets_its_note_in_the_comparison_and_the_comment(
) -> None:
    head = report([repeated("x", 18, 20)], "head")
    pooled, pool = pool_reports(base_runs([20, 20, 8, 20, 20], commit="older"),
                                base_commit="base", stale_hours=30)
    comparison = compare_reports(pooled, head, base_pool=pool)
    note = comparison.baseline_note
    assert note is not None and "drifting" in note and "stale" in note and "30 h" in note
    assert comparison.drift_sigma is not None and comparison.drift_sigma >= 0.5
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=head, base=pooled))
    assert "drifting: pass rates move between runs" in body and "30 h older than base" in body
    steady, steady_pool = pool_reports(base_runs([18, 19, 18]), base_commit="base")
    assert compare_reports(steady, head, base_pool=steady_pool).baseline_note is None
    _, unknown_age = pool_reports(base_runs([18, 19], commit="older"), base_commit="base")
    assert unknown_age.note is not None and "stale: from an older commit" in unknown_age.note


def test_pooled_runs_beyond_the_first_keep_no_conversations() -> None:
    from turncheck.report.results import TurnResult

    def with_turns(result: EvalResult) -> EvalResult:
        turn = TurnResult.model_construct(index=1, prompt="p", response="r")
        return result.model_copy(update={"samples": [
            s.model_copy(update={"turns": [turn]}) for s in result.samples]})

    first = report([with_turns(repeated("x", 2, 2))], "base")
    second = report([with_turns(repeated("x", 1, 2))], "base")
    pooled, _ = pool_reports([first, second], base_commit="base")
    samples = pooled.suites[0].evals[0].samples
    assert [len(s.turns) for s in samples] == [1, 1, 0, 0]
