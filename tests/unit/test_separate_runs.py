"""`compare` of base and head sampled live in separate runs: the run id says which runs
sampled a report, and repeated evals' tests then allow for drift between the runs."""

from __future__ import annotations

from tests.unit.test_compare import FAIL, PASS, ev, report, suite
from tests.unit.test_verdicts import rate
from turncheck.compare.comparison import compare_reports
from turncheck.engine.merge import merged_run_id
from turncheck.report.comparison import Comparison
from turncheck.report.run import EvalResult, Report
from turncheck.stats.verdicts import Verdict

# Every eval moved between the two runs, as many up as down: what a drift between the
# runs looks like (20 samples a side).
DRIFTED = [(17, 9), (9, 17), (16, 8), (8, 16), (18, 11), (11, 18), (15, 7), (7, 15),
           (19, 12), (12, 19)]


def side(evals: list[EvalResult], run_id: str | None, mode: str = "live") -> Report:
    return report(suite("s.yaml", *evals)).model_copy(update={"run_id": run_id, "mode": mode})


def drifted(base_run: str | None, head_run: str | None, mode: str = "live") -> Comparison:
    base = [rate(f"e{i}", before, 20) for i, (before, _) in enumerate(DRIFTED)]
    head = [rate(f"e{i}", after, 20) for i, (_, after) in enumerate(DRIFTED)]
    return compare_reports(side(base, base_run, mode), side(head, head_run, mode))


def regressions(comparison: Comparison) -> list[str]:
    return [e.name for s in comparison.suites for e in s.evals
            if e.verdict is Verdict.REGRESSION]


def test_separately_run_reports_allow_for_drift_the_same_reports_run_together_do_not(
        ) -> None:
    together = drifted("one-run", "one-run")
    assert regressions(together) == ["e0", "e8"]
    assert together.drift_sigma is None and not together.diagnostics

    apart = drifted("base-run", "head-run")
    assert regressions(apart) == []
    assert apart.drift_sigma is not None and apart.drift_sigma > 0.5
    [note] = apart.diagnostics
    assert note.code == "separate-runs" and not note.is_error
    assert "sampled in separate runs" in note.message and "turncheck diff" in note.message
    # The drops still show, short of a regression.
    assert {e.verdict for s in apart.suites for e in s.evals if e.name in ("e0", "e8")} \
        == {Verdict.LIKELY_REGRESSION}


def test_a_report_of_an_older_turncheck_against_a_new_run_is_two_runs() -> None:
    assert regressions(drifted(None, "head-run")) == []


def test_reports_that_name_no_run_are_compared_as_before() -> None:
    # Two reports of an older turncheck (or made by hand) do not say how they were
    # sampled: they keep the tests they had.
    assert regressions(drifted(None, None)) == ["e0", "e8"]


def test_two_replays_are_not_widened_whichever_runs_replayed_them() -> None:
    # Replayed answers are the recordings: a run that replays them samples nothing.
    assert regressions(drifted("base-run", "head-run", mode="replay")) == ["e0", "e8"]


def test_one_sample_per_side_is_compared_alike_run_together_or_apart() -> None:
    base = [ev("flip", PASS), ev("later", PASS, 1), ev("same", PASS)]
    head = [ev("flip", FAIL), ev("later", PASS, 3), ev("same", PASS)]
    found = []
    for runs in (("one-run", "one-run"), ("base-run", "head-run")):
        comparison = compare_reports(side(base, runs[0]), side(head, runs[1]))
        found.append(([(e.name, e.verdict) for e in comparison.suites[0].evals],
                      comparison.drift_sigma, comparison.diagnostics))
    assert found[0] == found[1]
    assert found[0][0][:2] == [("flip", Verdict.BROKEN), ("later", Verdict.LATER_TURN)]


def test_merged_shards_share_a_run_id_exactly_when_their_shards_did() -> None:
    def shards(*ids: str | None) -> list[Report]:
        return [side([], run_id) for run_id in ids]

    base, head = merged_run_id(shards("a", "b")), merged_run_id(shards("a", "b"))
    assert base == head == "a+b"
    assert merged_run_id(shards("a", "c")) != base
    assert merged_run_id(shards("a", None)) is None


def test_one_evals_own_drop_is_not_taken_for_drift_in_its_own_test() -> None:
    # Eight evals drift by 3 of 20 either way; one drops 18 → 9 of 20. Its own drop is
    # most of the spread between the runs: its test is widened by the others' drift.
    moved = [(15, 12), (12, 15), (16, 13), (13, 16), (14, 11), (11, 14), (17, 14), (14, 17),
             (18, 9)]
    base = side([rate(f"e{i}", before, 20) for i, (before, _) in enumerate(moved)], "base-run")
    head = side([rate(f"e{i}", after, 20) for i, (_, after) in enumerate(moved)], "head-run")
    comparison = compare_reports(base, head)
    assert regressions(comparison) == ["e8"]
    # The drift the comparison reports is the one over all evals, the drop included.
    assert comparison.drift_sigma is not None and comparison.drift_sigma > 0.4


def test_a_record_mode_comparison_says_it_cannot_tell_drift_from_change() -> None:
    # Issue 45 item 8: head records fresh answers while base replays older ones.
    recorded = drifted("one-run", "one-run", mode="record")
    [note] = [d for d in recorded.diagnostics if d.code == "record-mixed-sampling"]
    assert "cannot be told from a change" in note.message and not note.is_error
    live = drifted("one-run", "one-run")
    assert not [d for d in live.diagnostics if d.code == "record-mixed-sampling"]
