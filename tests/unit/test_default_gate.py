"""The default gate on one sample per side: a transition is evidence in replay only.

The statistical claim (≤ 5 % false failures on identical flaky suites in every mode and
sample count) is measured by benchmarks/verdicts.py; these tests pin the decision."""

from __future__ import annotations

import pytest

from tests.unit.test_compare import FAIL, PASS, ev, one_suite, report, suite
from turncheck.compare.policy import (
    DEFAULT_FAIL_ON,
    FailOn,
    fail_reasons,
    one_sample_note,
)
from turncheck.render.comment import CommentContext, render_summary
from turncheck.report.comparison import Comparison


def _one_broken_eval(mode: str) -> Comparison:
    comparison = one_suite([ev("a", PASS), ev("b", PASS, 1), ev("c", PASS)],
                           [ev("a", FAIL), ev("b", PASS, 3), ev("c", PASS)])
    return comparison.model_copy(update={"mode": mode})


def test_a_broken_eval_in_replay_fails_the_default_check() -> None:
    reasons = fail_reasons(_one_broken_eval("replay"), DEFAULT_FAIL_ON)
    assert "1 eval broke (one sample per side)" in reasons


@pytest.mark.parametrize("mode", ["live", "record"])
def test_a_broken_eval_on_one_live_sample_is_shown_but_does_not_fail_the_default_check(
        mode: str) -> None:
    comparison = _one_broken_eval(mode)
    assert [e.verdict.value for e in comparison.suites[0].evals] == \
        ["broken", "later-turn", "unchanged"]
    assert fail_reasons(comparison, DEFAULT_FAIL_ON) == []
    assert fail_reasons(comparison, (FailOn.BROKEN, FailOn.LATER_TURN)) == []
    # The watch tier still gates on every one-sample flip, in every mode.
    watch = fail_reasons(comparison, (FailOn.LIKELY_REGRESSION,))
    assert "1 eval broke (one sample per side)" in watch
    assert "1 eval passed on a later turn (one sample per side)" in watch


def test_many_broken_evals_on_one_live_sample_still_fail_as_a_suite_regression() -> None:
    comparison = one_suite([ev(f"e{i}", PASS) for i in range(20)],
                           [ev(f"e{i}", FAIL) for i in range(20)])
    comparison = comparison.model_copy(update={"mode": "live"})
    [reason] = fail_reasons(comparison, DEFAULT_FAIL_ON)
    assert reason.startswith("suite-level regression")


def test_the_footer_says_what_one_sample_can_and_cannot_prove() -> None:
    live, replay = _one_broken_eval("live"), _one_broken_eval("replay")
    assert "cannot prove a regression" in (one_sample_note(live) or "")
    assert "real change" in (one_sample_note(replay) or "")
    head = report(suite("s.yaml", ev("a", FAIL)))
    shown = render_summary(live, CommentContext(fail_reasons=[], head=head))
    assert "cannot prove a regression" in shown
