"""Statistical verdicts in `compare`: tiers, p-values, multiplicity and the fail-on policy."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.unit.test_compare import FAIL, PASS, ev, one_suite, report, suite
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons, parse_fail_on
from turncheck.engine.repeats import RepeatPlan, combine
from turncheck.report.run import EvalResult, Report
from turncheck.stats.verdicts import Verdict


def repeated(name: str, outcomes: list[int | None]) -> EvalResult:
    """An eval whose samples passed on the given turns (None: failed)."""
    samples = [ev(name, PASS, turn) if turn is not None else ev(name, FAIL) for turn in outcomes]
    return combine(samples, RepeatPlan(len(samples), len(samples), None), None)


def rate(name: str, passes: int, samples: int) -> EvalResult:
    return repeated(name, [1] * passes + [None] * (samples - passes))


def verdicts(base: list[EvalResult], head: list[EvalResult]) -> dict[str, Verdict]:
    return {e.name: e.verdict for s in one_suite(base, head).suites for e in s.evals}


def test_identical_flaky_evals_never_get_regression() -> None:
    rng = random.Random(3)
    for _ in range(10):
        base, head = [], []
        for index in range(20):
            chance = 0.3 + index * 0.03
            base.append(repeated(f"e{index}", [1 if rng.random() < chance else None
                                               for _ in range(10)]))
            head.append(repeated(f"e{index}", [1 if rng.random() < chance else None
                                               for _ in range(10)]))
        assert Verdict.REGRESSION not in verdicts(base, head).values()


def test_a_drop_from_nine_to_two_of_ten_is_a_regression_with_its_figures() -> None:
    comparison = one_suite([rate("drop", 9, 10)], [rate("drop", 2, 10)])
    [item] = comparison.suites[0].evals
    assert item.verdict is Verdict.REGRESSION
    assert item.p_value is not None and item.p_value < 0.003
    assert item.base is not None and item.head is not None
    assert (item.base.passes, item.base.samples, item.head.passes, item.head.samples) == (
        9, 10, 2, 10)
    assert item.head.flaky and item.pass_rate_change == -0.7
    as_json = json.loads(comparison.model_dump_json())["suites"][0]["evals"][0]
    assert {"verdict", "p_value", "transition", "label"} <= set(as_json)
    assert as_json["verdict"] == "regression"
    assert (as_json["head"]["passes"], as_json["head"]["samples"]) == (2, 10)


def test_a_one_sample_flip_is_never_a_regression() -> None:
    assert verdicts([ev("flip", PASS)], [ev("flip", FAIL)]) == {"flip": Verdict.BROKEN}
    assert verdicts([ev("later", PASS, 1)], [ev("later", PASS, 3)]) == {
        "later": Verdict.LATER_TURN}


def test_a_turn_of_pass_shift_at_equal_pass_counts_is_a_regression() -> None:
    comparison = one_suite([repeated("slow", [1] * 5)], [repeated("slow", [3] * 5)])
    [item] = comparison.suites[0].evals
    assert item.base is not None and item.head is not None
    assert item.base.passes == item.head.passes == 5
    assert item.verdict is Verdict.REGRESSION and item.turn_shift == 2.0
    assert item.head.turn_of_pass == {"3": 5}


def test_new_removed_improvement_and_unreliable_baseline() -> None:
    found = verdicts(
        [rate("fixed", 0, 10), rate("shaky", 3, 10), rate("gone", 5, 5)],
        [rate("fixed", 10, 10), rate("shaky", 0, 10), rate("fresh", 5, 5)])
    assert found == {"fixed": Verdict.IMPROVEMENT, "shaky": Verdict.UNRELIABLE_BASELINE,
                     "fresh": Verdict.NEW, "gone": Verdict.REMOVED}


def _drop_and_flaky() -> tuple[Report, Report]:
    base = report(suite("s.yaml", rate("drop", 9, 10), rate("coin", 5, 10), ev("once")))
    head = report(suite("s.yaml", rate("drop", 2, 10), rate("coin", 5, 10), ev("once", FAIL)))
    return base, head


def test_fail_on_regression_fails_only_on_the_regression_tier() -> None:
    comparison = compare_reports(*_drop_and_flaky())
    counts = comparison.totals.counts
    assert counts.verdicts["regression"] == 1 and counts.verdicts["broken"] == 1
    assert fail_reasons(comparison, parse_fail_on("regression")) == [
        "1 regression against base"]
    # likely-regression, the watch tier, also takes the one-sample transitions.
    assert fail_reasons(comparison, parse_fail_on("likely-regression")) == [
        "1 regression against base", "1 eval broke (one sample per side)"]
    assert fail_reasons(comparison, (FailOn.FLAKY,)) == [
        "2 flaky evals (passed on some samples, failed on others)"]


def test_old_single_sample_reports_still_load_and_compare() -> None:
    old = report(suite("s.yaml", ev("e", PASS, 2))).model_dump(mode="json")
    for item in old["suites"][0]["evals"]:
        item.pop("repeats"), item.pop("samples")
    loaded = Report.model_validate(old)
    comparison = compare_reports(loaded, loaded)
    [item] = comparison.suites[0].evals
    assert item.verdict is Verdict.UNCHANGED and item.base is not None
    assert (item.base.passes, item.base.samples) == (1, 1)


def test_comment_leads_with_regressions_and_badges_flaky_evals() -> None:
    from turncheck.render.comment import CommentContext, comment_markdown

    base = report(suite("s.yaml", rate("better", 0, 10), ev("flip"),
                        repeated("slow", [1] * 5), rate("coin", 5, 10)))
    head = report(suite("s.yaml", rate("better", 10, 10), ev("flip", FAIL),
                        repeated("slow", [3] * 5), rate("coin", 5, 10)))
    comparison = compare_reports(base, head)
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=head))
    sections = [line for line in body.splitlines() if line.startswith("### ")]
    assert sections[0] == "### 🔻 Regressions (1)"
    assert sections[1] == "### 🔴 Broke (1)"
    regressions = body.split("### 🔻 Regressions (1)\n", 1)[1].split("\n\n", 1)[0]
    assert "**slow**" in regressions and "(5/5 → 5/5 samples)" in regressions.replace("\\", "")
    assert "adjusted p = 0.0063 (raw p = 0.004)" in regressions.replace("\\", "")
    broke = body.split("### 🔴 Broke (1)\n", 1)[1].split("\n\n", 1)[0]
    assert "**flip**" in broke
    assert body.index("**slow**") < body.index("**flip**") < body.index("**better**")
    assert "1 flaky" in body


def test_console_shows_samples_and_verdicts(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.test_compare import cli, write
    from turncheck.render.console import overall

    base, head = _drop_and_flaky()
    assert cli(str(write(tmp_path / "b.json", base)), str(write(tmp_path / "h.json", head)),
               "--fail-on", "regression") == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "· regression (9/10 → 2/10, adjusted p = " in out and "(raw p = " in out
    assert "1 regression against base" in out
    assert overall(rate("coin", 5, 10)).endswith(
        "· 5/10 samples passed, flaky · pass^2 0.22, pass^4 0.02 (pass@4 0.98)")
