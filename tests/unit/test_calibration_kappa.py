"""Base-vs-head grader calibration compares the weighted κ with its uncertainty: each
side's interval, a paired bootstrap interval of the difference, and the paired swap test
behind "credibly lower"."""

from __future__ import annotations

from pathlib import Path

import pytest

from turncheck.cli.main import main
from turncheck.compare.calibration import calibration_reasons
from turncheck.compare.comparison import compare_reports
from turncheck.engine.calibration import agreement_stats
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.calibration import (
    CalibrationFileResult,
    GraderInfo,
    SampleGrade,
    badge_for,
)
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.run import PriceSource, Report

PRICES = PriceSource(library="genai-prices", version="0", timestamp="2026-01-01T00:00:00Z")
# A fixed set of eight labelled samples, no label 0 (so no resample is all-agreeing by
# chance with a grader that always answers 0).
LABELS = {"a": -3, "b": -2, "c": -1, "d": 1, "e": 2, "f": 3, "g": 3, "h": -3}


def graded(scores: dict[str, int]) -> CalibrationFileResult:
    rows = []
    for sample_id, label in LABELS.items():
        score = scores[sample_id]
        rows.append(SampleGrade(id=sample_id, line=1, label=label, score=score,
                                distance=abs(score - label), badge=badge_for(abs(score - label))))
    agreed = sum(r.distance == 0 for r in rows)
    return CalibrationFileResult(
        path="x.samples.toml",
        grader=GraderInfo(model="m", provider="openai", kind="criteria", prompt_version=None,
                          instructions="c", line=1),
        valid_samples=len(rows), samples=rows, agreed=agreed,
        agreement_percent=100 * agreed / len(rows), mean_distance=0.0, cost_usd=0.0,
        agreement=agreement_stats(rows, None),
    )


def report_of(result: CalibrationFileResult) -> Report:
    return Report(turncheck_version="0", mode="replay", price_source=PRICES,
                  started_at="2026-01-01T00:00:00Z", duration_s=0, calibrations=[result])


PERFECT = dict(LABELS)
ZEROS = dict.fromkeys(LABELS, 0)
ONE_OFF = {**LABELS, "d": 2}


def test_a_grader_that_stops_discriminating_is_credibly_lower() -> None:
    comparison = compare_reports(report_of(graded(PERFECT)), report_of(graded(ZEROS)))
    [item] = comparison.calibration
    kappa = item.kappa
    assert kappa is not None
    # Base agrees exactly: κw = 1 on every resample. Head always answers 0: its observed
    # agreement equals the chance agreement, so κw = 0 on every resample. Eight samples
    # do not prove κ = 1 (or 0), so the intervals keep a floor of one sample's worth:
    # ± t(7) / 8 (the bootstrap alone gave [1.00, 1.00] and under-covered).
    assert (kappa.base, kappa.base_high) == (1.0, 1.0)
    assert kappa.base_low == pytest.approx(0.704, abs=1e-3)
    assert (kappa.head_low, kappa.head, kappa.head_high) == pytest.approx((-0.296, 0.0, 0.296),
                                                                         abs=1e-3)
    assert (kappa.delta, kappa.delta_low, kappa.delta_high) == pytest.approx((-1.0, -1.0, -1.0))
    # Only the 1 in 256 swap patterns that keep every score on its side reach Δ = −1.
    assert kappa.paired_samples == 8 and kappa.lower
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report_of(
        graded(ZEROS))))
    assert ("| 1.00 [0.70, 1.00] → 0.00 [−0.30, 0.30] · 📉 credibly lower "
            "(Δ −1.00 [−1.00, −1.00]) |") in body
    # min-kappa keeps judging the head's own κ.
    reasons = calibration_reasons(comparison.calibration, CalibrationThresholds(min_kappa=0.5))
    assert reasons == ["x.samples.toml: grader weighted kappa 0.00 is below the minimum 0.5"]


def test_one_near_miss_is_not_credibly_lower() -> None:
    comparison = compare_reports(report_of(graded(PERFECT)), report_of(graded(ONE_OFF)))
    [item] = comparison.calibration
    kappa = item.kappa
    assert kappa is not None and kappa.head is not None
    # Quadratic κw = 1 − mean observed d² / mean chance d² (over all label × score pairs).
    # Labels −3,−2,−1,1,2,3,3,−3: Σl = 0, Σl² = 46; head scores d as 2: Σs² = 49.
    # Observed: one d² of 1 → 1/8. Chance: (Σl² + Σs²)/8 − 2·Σl·Σs/64 = 95/8.
    assert kappa.head == pytest.approx(1 - 1 / 95, abs=1e-6)
    # The head is never better than a perfect base, and equal on every resample that
    # misses sample d ((7/8)^8 ≈ 34 % of them): the upper bound of Δ is exactly 0.
    assert kappa.delta_high == 0.0 and kappa.delta_low is not None and kappa.delta_low < 0
    assert not kappa.lower
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report_of(
        graded(ONE_OFF))))
    assert "credibly lower" not in body


def test_the_compare_command_prints_both_kappas_and_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(report_of(graded(PERFECT)).model_dump_json())
    head.write_text(report_of(graded(ZEROS)).model_dump_json())
    assert main(["compare", str(base), str(head)]) == 0
    out = capsys.readouterr().out
    assert ("calibration x.samples.toml: agreement 100% → 0%, weighted κ 1.00 [0.70, 1.00] → "
            "0.00 [−0.30, 0.30] (Δ −1.00 [−1.00, −1.00]: credibly lower)") in out
    assert main(["compare", str(base), str(head), "--fail-on", "calibration",
                 "--min-kappa", "0.5"]) == 1
    assert "weighted kappa 0.00 is below the minimum 0.5" in capsys.readouterr().err
