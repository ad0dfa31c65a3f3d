"""Issue 45 item 3: the turn of pass is tested on every path. Against a pooled base and
between two separately run reports, an eval that still passes but a turn or two later
is a regression; evals that merely vary are not."""

from __future__ import annotations

import numpy as np

from tests.unit.test_compare import report, suite
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, fail_reasons
from turncheck.compare.pool import pool_reports
from turncheck.engine.repeats import RepeatPlan, combine
from turncheck.report.comparison import Comparison
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, Report
from turncheck.report.spend import Usage
from turncheck.stats.verdicts import Verdict

SAMPLES = 12
NOISY = 12


def sampled(name: str, turns: list[int | None]) -> EvalResult:
    """One eval of `len(turns)` samples, each passing on its turn (None: failed)."""
    outcomes = [EvalResult(name=name, prompt=f"prompt of {name}",
                           status=Status.PASS if turn is not None else Status.FAIL,
                           passed_on_turn=turn, error=None, usage=Usage(), cost_usd=0.0,
                           judge_usage=Usage(), judge_cost_usd=None) for turn in turns]
    return combine(outcomes, RepeatPlan(len(turns), len(turns), None), 1)


def noisy_turns(rng: np.random.Generator, rate: float) -> list[int | None]:
    """A 3-turn eval passing with chance `rate`, on a turn drawn at random."""
    return [int(rng.integers(1, 4)) if rng.random() < rate else None
            for _ in range(SAMPLES)]


def run(rng: np.random.Generator, shifted_to: int, commit: str, run_id: str,
        drift: float = 0.0) -> Report:
    """One live run: 12 noisy evals, two steady ones and `late`, which passes every
    sample on `shifted_to`; `drift` moves the noisy evals' rates, every other one up and
    the others down."""
    rates = np.linspace(0.55, 0.95, NOISY) + drift * np.resize([1, -1], NOISY)
    rates = np.clip(rates, 0.05, 0.95)
    evals = [sampled(f"noisy{i}", noisy_turns(rng, float(r))) for i, r in enumerate(rates)]
    evals += [sampled("steady1", [1] * SAMPLES), sampled("steady2", [2] * SAMPLES),
              sampled("late", [shifted_to] * SAMPLES)]
    return report(suite("s.yaml", *evals)).model_copy(
        update={"run_id": run_id, "commit": commit, "mode": "live"})


def verdicts(comparison: Comparison) -> dict[str, Verdict]:
    return {e.name: e.verdict for s in comparison.suites for e in s.evals}


def test_a_later_turn_between_two_separately_run_reports_is_a_regression() -> None:
    rng = np.random.default_rng(45)
    comparison = compare_reports(run(rng, 1, "base", "base-run"),
                                 run(rng, 3, "head", "head-run"))
    found = verdicts(comparison)
    assert found["late"] is Verdict.REGRESSION  # was "inconclusive (adjusted p = 1)"
    assert [name for name, v in found.items() if v is Verdict.REGRESSION] == ["late"]
    assert comparison.drift_sigma is not None  # tested with the drift allowed for
    assert fail_reasons(comparison, DEFAULT_FAIL_ON)


def test_a_later_turn_against_a_pooled_base_of_main_is_a_regression() -> None:
    rng = np.random.default_rng(46)
    stored = [run(rng, 1, "base", "main-1"), run(rng, 1, "base", "main-2")]
    pooled, pool = pool_reports(stored, base_commit="base")
    found = verdicts(compare_reports(pooled, run(rng, 3, "head", "pr"), base_pool=pool))
    assert found["late"] is Verdict.REGRESSION
    assert [name for name, v in found.items() if v is Verdict.REGRESSION] == ["late"]


def test_noisy_evals_of_two_separate_runs_are_not_flagged() -> None:
    for seed in range(5):
        rng = np.random.default_rng(seed)
        comparison = compare_reports(run(rng, 1, "base", "base-run"),
                                     run(rng, 1, "head", "head-run"))
        assert Verdict.REGRESSION not in verdicts(comparison).values()


def test_an_inconclusive_drop_between_separate_runs_says_the_drift_was_allowed_for() -> None:
    rng = np.random.default_rng(7)
    base, head = run(rng, 1, "base", "base-run"), run(rng, 1, "head", "head-run", 0.3)
    dropped = sampled("late", [1] * 10 + [None] * 2)  # 12/12 → 10/12: material, not proven
    head = head.model_copy(update={"suites": [head.suites[0].model_copy(update={
        "evals": [*head.suites[0].evals[:-1], dropped]})]})
    [row] = [e for s in compare_reports(base, head).suites for e in s.evals
             if e.name == "late"]
    assert row.verdict is Verdict.INCONCLUSIVE
    assert row.verdict_reason.startswith("worse, but too few samples to tell with the drift "
                                         "between runs (σ ≈ ")


def test_an_auto_head_that_stopped_says_its_turn_of_pass_was_not_tested() -> None:
    rng = np.random.default_rng(8)
    stored = [run(rng, 1, "base", "main-1"), run(rng, 1, "base", "main-2")]
    pooled, pool = pool_reports(stored, base_commit="base")
    head = run(rng, 1, "head", "pr")
    late = [EvalResult(name="late", prompt="prompt of late", status=Status.PASS,
                       passed_on_turn=3, error=None, usage=Usage(), cost_usd=0.0,
                       judge_usage=Usage(), judge_cost_usd=None)] * 10
    stopped = combine(late, RepeatPlan(None, 20, None), 1, [0] * 10)  # 10 alike: stopped
    head = head.model_copy(update={"suites": [head.suites[0].model_copy(update={
        "evals": [*head.suites[0].evals[:-1], stopped]})]})
    [row] = [e for s in compare_reports(pooled, head, base_pool=pool).suites
             for e in s.evals if e.name == "late"]
    assert row.verdict is Verdict.INCONCLUSIVE
    assert "the turn of pass is not tested" in row.verdict_reason
