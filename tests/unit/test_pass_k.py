"""pass^k and pass@k of repeated samples, as tau2-bench and Inspect compute them."""

from __future__ import annotations

import math

import pytest

from turncheck.engine.repeats import RepeatPlan, summarize
from turncheck.render.display import pass_k_text
from turncheck.report.results import Status
from turncheck.stats.rates import k_values, pass_at_k, pass_hat_k, pass_k_table


@pytest.mark.parametrize(("passes", "samples", "k"), [
    (3, 5, 2), (5, 5, 3), (0, 4, 1), (7, 10, 4), (9, 20, 8), (1, 3, 3),
])
def test_pass_hat_k_is_c_choose_k_over_n_choose_k(passes: int, samples: int, k: int) -> None:
    assert pass_hat_k(passes, samples, k) == pytest.approx(
        math.comb(passes, k) / math.comb(samples, k))
    assert pass_at_k(passes, samples, k) == pytest.approx(
        1 - math.comb(samples - passes, k) / math.comb(samples, k))


def test_known_values() -> None:
    # 3 of 5 passed: pass^2 = C(3,2)/C(5,2) = 3/10; pass@2 = 1 − C(2,2)/C(5,2) = 0.9.
    assert pass_hat_k(3, 5, 2) == pytest.approx(0.3)
    assert pass_at_k(3, 5, 2) == pytest.approx(0.9)
    # k = 1 is the pass rate; k = n is "every sample passed" / "any passed".
    assert pass_hat_k(3, 5, 1) == pass_at_k(3, 5, 1) == pytest.approx(0.6)
    assert (pass_hat_k(5, 5, 5), pass_hat_k(4, 5, 5)) == (1.0, 0.0)
    assert (pass_at_k(1, 5, 5), pass_at_k(0, 5, 5)) == (1.0, 0.0)


def test_pass_hat_k_is_unbiased_for_k_fresh_samples_all_passing() -> None:
    # E[C(C, k) / C(n, k)] over C ~ Binomial(n, p) equals p^k.
    n, k, p = 6, 3, 0.7
    expected = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * pass_hat_k(c, n, k)  # type: ignore[operator]
                   for c in range(n + 1))
    assert expected == pytest.approx(p**k)


def test_k_outside_one_to_n_is_not_shown() -> None:
    assert pass_hat_k(3, 5, 6) is None and pass_at_k(3, 5, 6) is None
    assert pass_hat_k(0, 0, 1) is None and pass_hat_k(3, 5, 0) is None
    assert k_values(5) == [1, 2, 4]
    assert k_values(1) == [1]
    assert pass_k_table(0, 0) == ({}, {})


def test_an_evals_repeat_summary_carries_pass_k_over_its_usable_samples() -> None:
    class Sample:
        def __init__(self, status: Status) -> None:
            self.status = status

    statuses = [Status.PASS] * 3 + [Status.FAIL] * 2 + [Status.ERROR]
    summary = summarize([Sample(s) for s in statuses], RepeatPlan(6, 6, None))
    assert summary.pass_hat_k == {"1": 0.6, "2": 0.3, "4": 0.0}
    assert summary.pass_at_k == {"1": 0.6, "2": 0.9, "4": 1.0}
    dumped = summary.model_dump(mode="json")
    assert dumped["pass_hat_k"]["2"] == 0.3
    assert pass_k_text(summary.pass_hat_k, summary.pass_at_k) == \
        "pass^2 0.30, pass^4 0.00 (pass@4 1.00)"


def test_the_html_report_and_the_console_show_pass_k_beside_the_pass_rate() -> None:
    from tests.unit.test_verdicts import rate
    from turncheck.render.console import overall
    from turncheck.render.html_report import _eval_facts

    base, head = rate("coin", 9, 10), rate("coin", 5, 10)
    facts = _eval_facts(base, head)
    assert "base 9/10 samples pass (60%–98%), pass^2 0.80, pass^4 0.60 (pass@4 1.00)" in facts
    assert any(f.startswith("head 5/10 samples pass") and "pass^2 0.22" in f for f in facts)
    assert "pass^4 0.02 (pass@4 0.98)" in overall(head)
