"""Evals, protocol cases and sample files are one kind of compared row: the same fields
(transition, label, base and head status, sides, spend delta, line, error, verdict) in the
comparison JSON, built by one `compare/rows.compared_row`, listed with their verdict; the
HTML report shows a sample file as one row whose verdict is the comparison's."""

from __future__ import annotations

import json

from tests.golden.test_comment_rendering import eval_result, report, suite, turn
from tests.unit.test_calibration_kappa import ONE_OFF, PERFECT, ZEROS, graded, report_of
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons
from turncheck.compare.protocol import compare_cases
from turncheck.compare.rows import family_counts
from turncheck.render.html_report import build_view
from turncheck.report.comparison import Comparison
from turncheck.report.protocol import CaseResult
from turncheck.report.results import Status
from turncheck.report.rows import RowKind, Transition
from turncheck.report.run import Report
from turncheck.stats.verdicts import Verdict


def _with_minimum(scores: dict[str, int]) -> Report:
    """A sample file whose grader must agree on half its samples (else it fails)."""
    return report_of(graded(scores).model_copy(update={"min_agreement": 50.0}))


SHARED = {"transition", "label", "regression", "base_status", "head_status", "base", "head",
          "delta", "line", "error", "verdict", "p_value", "p_raw", "verdict_reason",
          "verdict_cause", "flaky"}


def _eval_comparison() -> Comparison:
    passed = eval_result("refund", [turn(1, "How long?", "30 days.", True)])
    failed = eval_result("refund", [turn(1, "How long?", "No idea.", False)])
    return compare_reports(report([suite("evals/a.eval.yaml", "a", [passed])], "b" * 40),
                           report([suite("evals/a.eval.yaml", "a", [failed])], "c" * 40))


def test_every_kind_of_row_writes_the_same_fields() -> None:
    evals = _eval_comparison()
    files = compare_reports(_with_minimum(PERFECT), _with_minimum(ZEROS))
    case = compare_cases(CaseResult(id="q1", status=Status.PASS),
                         CaseResult(id="q1", status=Status.FAIL, line=4), [])
    rows = [json.loads(evals.model_dump_json())["suites"][0]["evals"][0],
            json.loads(files.model_dump_json())["calibration"][0],
            json.loads(case.model_dump_json())]
    for row in rows:
        assert set(row) >= SHARED, SHARED - set(row)
    assert [row["transition"] for row in rows] == ["broken", "broken", "broken"]
    assert [row["head_status"] for row in rows] == ["fail", "fail", "fail"]
    assert rows[2]["label"] == "broken" and rows[2]["line"] == 4


def test_a_sample_file_is_a_row_with_its_status_and_its_kappa_verdict() -> None:
    """A grader that stops discriminating: the file fails its rows' agreement and its κ
    is credibly lower, a regression judged apart from the evals' family."""
    comparison = compare_reports(_with_minimum(PERFECT), _with_minimum(ZEROS))
    [found] = comparison.located()
    assert found.row.kind is RowKind.SAMPLE_FILE and found.row.name == "x.samples.toml"
    assert (found.row.base_status, found.row.head_status) == (Status.PASS, Status.FAIL)
    assert found.row.verdict is Verdict.REGRESSION and "κ" in found.row.verdict_reason
    listed = found.listed
    assert (listed.verdict, listed.passes, listed.samples) == (Verdict.REGRESSION, 0, 8)
    # Its own gate is `calibration`: the default gate and the evals' counts ignore it.
    assert family_counts(comparison) == []
    assert fail_reasons(comparison, (FailOn.REGRESSION,)) == []


def test_a_near_miss_leaves_the_sample_file_unchanged_and_a_new_file_is_new() -> None:
    near = compare_reports(report_of(graded(PERFECT)), report_of(graded(ONE_OFF)))
    assert near.calibration[0].verdict is Verdict.UNCHANGED
    new = compare_reports(report_of(graded(PERFECT)).model_copy(update={"calibrations": []}),
                          report_of(graded(PERFECT)))
    assert new.calibration[0].transition is Transition.NEW
    assert new.calibration[0].verdict is Verdict.NEW


def test_a_comparison_written_before_files_were_rows_still_reads() -> None:
    comparison = compare_reports(report_of(graded(PERFECT)), report_of(graded(ZEROS)))
    written = json.loads(comparison.model_dump_json())
    for shared in SHARED:
        written["calibration"][0].pop(shared)
    read = Comparison.model_validate(written)
    assert read.calibration[0].transition is Transition.UNCHANGED
    assert read.calibration[0].label == "unchanged"


def test_the_html_report_shows_a_sample_file_as_one_row_with_the_comparisons_verdict() -> None:
    base, head = _with_minimum(PERFECT), _with_minimum(ZEROS)
    view = build_view(head=head, base=base, comparison=compare_reports(base, head))
    [section] = [s for s in view.sections if s.kind == "samples"]
    [row] = section.rows
    assert (row.name, row.verdict, row.status) == ("x.samples.toml", "regression", "fail")
    assert len(row.base_samples) == len(row.head_samples) == 8
    assert row.transition == "broken" and "credibly lower" in row.why
    alone = build_view(head=head)
    [section] = [s for s in alone.sections if s.kind == "samples"]
    assert [(r.verdict, r.status) for r in section.rows] == [("fail", "fail")]


def test_the_eval_and_case_counts_are_counted_over_rows() -> None:
    evals = _eval_comparison()
    [counted] = family_counts(evals)
    assert counted.kind is RowKind.EVAL and counted.heads == 1
    assert (counted.counts.failed, counted.counts.broken) == (1, 1)
    assert counted.counts.failed == evals.totals.counts.failed


def test_a_sample_file_graded_on_neither_side_is_listed_as_not_run_and_not_shown() -> None:
    ungraded = graded(PERFECT).model_copy(update={"grader": None, "samples": [],
                                                  "note": "no grader"})
    comparison = compare_reports(report_of(ungraded), report_of(ungraded))
    [found] = comparison.located()
    assert (found.listed.status, found.listed.samples) == (Status.SKIPPED, 0)
    view = build_view(head=report_of(ungraded), base=report_of(ungraded),
                      comparison=comparison)
    assert [s.kind for s in view.sections] == []
