"""Issue 22's verdict rules: errors and budget skips are not evidence, one-sample
transitions, the default gate, exact tests, materiality and the suite-level test."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.unit.test_compare import ERROR, FAIL, PASS, ev, one_suite, report, suite
from turncheck.cli.main import main
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, fail_reasons, parse_fail_on
from turncheck.engine.repeats import RepeatPlan, combine, status_of
from turncheck.render.comment import CommentContext, comment_headline, comment_markdown
from turncheck.report.comparison import Comparison
from turncheck.report.results import Status
from turncheck.report.run import EvalResult
from turncheck.stats.multiplicity import tarone_holm
from turncheck.stats.rates import usable_minimum
from turncheck.stats.tests import Stratum, stratified_pass_test, turn_shift_test
from turncheck.stats.verdicts import Unusable, Verdict, decide, outcome_evidence, suite_evidence

SKIPPED = Status.SKIPPED


def skipped(name: str) -> EvalResult:
    return ev(name, SKIPPED).model_copy(update={"reason": "budget", "passed_on_turn": None})


def sampled(name: str, statuses: list[Status], turn: int = 1) -> EvalResult:
    samples = [skipped(name) if s is SKIPPED else ev(name, s, turn) for s in statuses]
    return combine(samples, RepeatPlan(len(samples), len(samples), None), None)


def rate(name: str, passes: int, samples: int) -> EvalResult:
    return sampled(name, [PASS] * passes + [FAIL] * (samples - passes))


def evals(comparison: Comparison) -> dict[str, object]:
    return {e.name: e for s in comparison.suites for e in s.evals}


# -- item 1: errors and budget skips -------------------------------------------------


def test_head_provider_down_is_inconclusive_for_errors_and_fails_by_the_error_gate_only(
) -> None:
    names = [f"e{i}" for i in range(5)]
    comparison = one_suite([rate(n, 20, 20) for n in names],
                           [sampled(n, [ERROR] * 20) for n in names])
    rows = [e for s in comparison.suites for e in s.evals]
    assert {e.verdict for e in rows} == {Verdict.INCONCLUSIVE}
    assert {e.verdict_cause for e in rows} == {"errors"}
    assert {e.head_status for e in rows} == {Status.ERROR}
    assert comparison.suites[0].verdict is Verdict.UNCHANGED
    every_gate = set(FailOn) - {FailOn.COST, FailOn.CALIBRATION}
    reasons = fail_reasons(comparison, every_gate)
    assert reasons == ["5 evals errored (infrastructure, not a verdict)"]
    assert fail_reasons(comparison, every_gate - {FailOn.ERROR}) == []
    title = comment_headline(comparison, reasons)
    assert title.text.startswith("5 evals errored (not judged) · provider failed")
    assert title.icon == "❌"
    assert "regressed" not in title.counts and "5 errors" in title.counts


def test_a_single_errored_head_sample_is_not_a_broken_eval() -> None:
    comparison = one_suite([ev("e", PASS)], [ev("e", ERROR)])
    [row] = comparison.suites[0].evals
    assert (row.verdict, row.verdict_cause) == (Verdict.INCONCLUSIVE, "errors")
    assert not row.regression and comparison.broken == 0
    assert fail_reasons(comparison, {FailOn.BROKEN, FailOn.REGRESSION}) == []


def test_budget_skipped_head_samples_make_the_eval_skipped_and_inconclusive() -> None:
    head = sampled("e", [SKIPPED] * 20)
    assert head.status is Status.SKIPPED and head.reason == "budget"
    comparison = one_suite([rate("e", 20, 20)], [head])
    [row] = comparison.suites[0].evals
    assert (row.verdict, row.verdict_cause) == (Verdict.INCONCLUSIVE, "budget")
    assert comparison.failed == 0
    assert fail_reasons(comparison, set(FailOn) - {FailOn.COST, FailOn.CALIBRATION,
                                                   FailOn.BUDGET}) == []
    assert fail_reasons(comparison, {FailOn.BUDGET}) == [
        "1 eval not run (a budget stopped them)"]


def test_a_few_errored_samples_are_left_out_not_counted_as_failures() -> None:
    head = sampled("e", [PASS] * 18 + [ERROR] * 2)
    assert head.status is Status.PASS  # every usable sample passed
    comparison = one_suite([rate("e", 20, 20)], [head])
    [row] = comparison.suites[0].evals
    assert row.verdict is Verdict.UNCHANGED
    assert row.head is not None and (row.head.passes, row.head.samples, row.head.errored) == (
        18, 18, 2)


def test_status_needs_half_the_samples_usable_and_is_never_fail_otherwise() -> None:
    assert usable_minimum(1) == 1 and usable_minimum(20) == 10 and usable_minimum(5) == 3
    assert status_of(sampled("e", [FAIL] * 9 + [ERROR] * 11).samples, None) is Status.ERROR
    assert status_of(sampled("e", [FAIL] * 10 + [ERROR] * 10).samples, None) is Status.FAIL
    assert status_of(sampled("e", [FAIL] * 2 + [SKIPPED] * 8).samples, None) is Status.SKIPPED


# -- item 8: one sample per side ------------------------------------------------------


def test_one_sample_flips_are_symmetric_transitions() -> None:
    comparison = one_suite(
        [ev("broke", PASS), ev("fixed", FAIL), ev("later", PASS, 1), ev("earlier", PASS, 3)],
        [ev("broke", FAIL), ev("fixed", PASS), ev("later", PASS, 3), ev("earlier", PASS, 1)])
    found = {name: row.verdict for name, row in evals(comparison).items()}  # type: ignore[attr-defined]
    assert found == {"broke": Verdict.BROKEN, "fixed": Verdict.FIXED,
                     "later": Verdict.LATER_TURN, "earlier": Verdict.EARLIER_TURN}
    markdown = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report()))
    for title in ("Broke", "Fixed", "Later turn", "Earlier turn"):
        assert title in markdown
    assert "Inconclusive" not in markdown


def test_transitions_are_gateable_by_name() -> None:
    comparison = one_suite([ev("a", PASS, 1), ev("b", PASS)], [ev("a", PASS, 2), ev("b", FAIL)])
    assert parse_fail_on("broken,later-turn") == (FailOn.BROKEN, FailOn.LATER_TURN)
    assert fail_reasons(comparison, {FailOn.BROKEN}) == ["1 eval broke (one sample per side)"]
    assert fail_reasons(comparison, {FailOn.LATER_TURN}) == [
        "1 eval passed on a later turn (one sample per side)"]
    assert fail_reasons(comparison, {FailOn.REGRESSION}) == []


def test_twenty_broken_evals_fail_the_default_check_without_repeats() -> None:
    names = [f"e{i}" for i in range(20)]
    comparison = one_suite([ev(n, PASS) for n in names], [ev(n, FAIL) for n in names])
    [listed] = comparison.suites
    assert listed.verdict is Verdict.REGRESSION
    reasons = fail_reasons(comparison, DEFAULT_FAIL_ON)
    assert any("suite-level regression" in r for r in reasons)
    assert "20 evals broke (one sample per side)" in reasons


# -- item 9: defaults that do not flap ------------------------------------------------


def test_the_default_gate_does_not_trip_on_identical_flaky_repeated_evals() -> None:
    rng = random.Random(7)
    tripped = 0
    for _ in range(40):
        rates = [0.5, 0.7, 0.8, 0.9, 0.95, 1.0] * 3
        base = [sampled(f"e{i}", [PASS if rng.random() < p else FAIL for _ in range(10)])
                for i, p in enumerate(rates)]
        head = [sampled(f"e{i}", [PASS if rng.random() < p else FAIL for _ in range(10)])
                for i, p in enumerate(rates)]
        tripped += bool(fail_reasons(one_suite(base, head), DEFAULT_FAIL_ON))
    # The old default (invalid,failure) tripped on nearly every one of these.
    assert tripped <= 4
    assert FailOn.FAILURE not in DEFAULT_FAIL_ON
    assert FailOn.LIKELY_REGRESSION not in DEFAULT_FAIL_ON


def test_compare_without_fail_on_applies_the_default_gate(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    monkeypatch.chdir(tmp_path)
    base = report(suite("s.yaml", ev("e", PASS)), commit="b")
    head = report(suite("s.yaml", ev("e", ERROR)))
    (tmp_path / "b.json").write_text(base.model_dump_json())
    (tmp_path / "h.json").write_text(head.model_dump_json())
    assert main(["compare", "b.json", "h.json"]) == 1
    out, err = capsys.readouterr()
    assert "errored (infrastructure, not a verdict)" in err
    assert "verdict: ❌ 1 eval errored (not judged)" in out and "1 error ·" in out


# -- item 4: exact tests ---------------------------------------------------------------


def test_decisions_use_exact_p_values() -> None:
    # 3/3 → 0/3: Fisher's exact one-sided p is 1/20; mid-p would say 1/40.
    test = turn_shift_test([1, 1, 1], [None, None, None])
    assert test.worse == pytest.approx(0.05)
    assert test.least_worse == pytest.approx(0.05)


def test_exact_tarone_holm_keeps_the_family_wise_rate_for_small_samples() -> None:
    rng = random.Random(11)
    alarms, trials = 0, 600
    for _ in range(trials):
        evidence = []
        for p in (0.6, 0.8, 0.9, 0.95, 0.97):
            base = [1 if rng.random() < p else None for _ in range(6)]
            head = [1 if rng.random() < p else None for _ in range(6)]
            evidence.append(outcome_evidence(base, head))
        alarms += any(d.verdict is Verdict.REGRESSION for d in decide(evidence))
    assert alarms / trials <= 0.05
    assert tarone_holm([0.01, 0.5], [0.01, 0.5], 0.05) == [0.01, 1.0]


# -- item 3: the minimum effect without capping power ---------------------------------


def test_power_for_the_minimum_effect_rises_with_the_samples() -> None:
    rng = random.Random(5)

    def power(samples: int) -> float:
        hits = 0
        for _ in range(200):
            base = [1 if rng.random() < 0.95 else None for _ in range(samples)]
            head = [1 if rng.random() < 0.75 else None for _ in range(samples)]
            hits += decide([outcome_evidence(base, head)])[0].verdict is Verdict.REGRESSION
        return hits / 200

    small, large = power(30), power(80)
    assert large > small and large >= 0.9


def test_a_drop_below_half_the_minimum_effect_is_not_material() -> None:
    [decision] = decide([outcome_evidence([1] * 200, [1] * 185 + [None] * 15)])
    assert decision.verdict is Verdict.UNCHANGED


# -- item 5: suite-level drops -----------------------------------------------------------


def test_stratified_test_is_the_exact_convolution_of_hypergeometric_laws() -> None:
    one = stratified_pass_test([Stratum(1, 1, 0, 1)])
    assert one.worse == pytest.approx(0.5)
    twenty = stratified_pass_test([Stratum(1, 1, 0, 1)] * 20)
    assert twenty.worse == pytest.approx(0.5 ** 20)
    flat = stratified_pass_test([Stratum(5, 5, 5, 5)] * 3)
    assert (flat.worse, flat.least_worse) == (1.0, 1.0)


def test_a_small_drop_in_every_eval_is_a_suite_level_regression(tmp_path: Path) -> None:
    names = [f"e{i}" for i in range(20)]
    comparison = one_suite([rate(n, 19, 20) for n in names], [rate(n, 17, 20) for n in names])
    assert {e.verdict for e in comparison.suites[0].evals} <= {Verdict.UNCHANGED,
                                                               Verdict.INCONCLUSIVE}
    [listed] = comparison.suites
    assert listed.verdict is Verdict.REGRESSION and listed.p_value is not None
    assert listed.p_value < 0.001 and listed.pass_rate_change == pytest.approx(-0.1)
    as_json = json.loads(comparison.model_dump_json())["suites"][0]
    assert as_json["verdict"] == "regression"
    reasons = fail_reasons(comparison, {FailOn.REGRESSION})
    assert reasons == ["suite-level regression of 1 suite: s"]
    markdown = comment_markdown(comparison, CommentContext(fail_reasons=reasons, head=report()))
    assert "**suite s**" in markdown and "suite\\-level test" in markdown
    assert comment_headline(comparison, reasons).text.startswith(
        "1 suite regression · suite s pass rate down 10.0 points")


def test_suite_evidence_needs_two_judged_evals() -> None:
    assert suite_evidence([([1], [None])]).empty
    assert not suite_evidence([([1], [None]), ([1], [None])]).empty


def test_old_comparisons_without_the_new_fields_still_load() -> None:
    comparison = one_suite([ev("e", PASS)], [ev("e", FAIL)])
    data = json.loads(comparison.model_dump_json())
    for listed in data["suites"]:
        for key in ("verdict", "p_value", "verdict_reason", "pass_rate_change"):
            listed.pop(key)
        for row in listed["evals"]:
            row.pop("verdict_cause")
            for side in ("base", "head"):
                for key in ("errored", "skipped", "skip_reason"):
                    row[side].pop(key)
    data["totals"]["counts"].pop("unjudged")
    loaded = Comparison.model_validate(data)
    assert loaded.suites[0].verdict is Verdict.UNCHANGED


def test_unusable_counts_reach_the_evidence() -> None:
    evidence = outcome_evidence([1] * 10, [1] * 3, head_lost=Unusable(errors=7))
    assert evidence.empty and evidence.cause == "errors"
    assert decide([evidence])[0].cause == "errors"


def test_the_discrete_step_down_is_never_above_tarone_holm_and_can_be_below() -> None:
    from turncheck.stats.multiplicity import discrete_holm

    rng = random.Random(3)
    tests = [turn_shift_test([1 if rng.random() < p else None for _ in range(12)],
                             [1 if rng.random() < p - 0.3 else None for _ in range(12)])
             for p in (0.95, 0.9, 0.8, 0.7, 0.6, 0.99, 1.0)]
    p_values = [t.worse for t in tests]
    least = [t.least_worse for t in tests]
    exact = discrete_holm(p_values, [t.worse_null for t in tests], least, [True] * len(tests))
    bound = tarone_holm(p_values, least, 0.05)
    assert all(e <= b + 1e-12 for e, b in zip(exact, bound, strict=True))
    assert any(e < b - 1e-6 for e, b in zip(exact, bound, strict=True))
