"""What the views of a protocol suite say: declared aggregates (and those of an older
report), where a case broke, ratings on their scale."""

from __future__ import annotations

from turncheck.render.severity import broke_on
from turncheck.report.protocol import ProtocolAggregates, ProtocolSuiteResult
from turncheck.report.protocol_comparison import (
    CaseComparison,
    ScorerChange,
    TurnScoreComparison,
)
from turncheck.report.results import Status
from turncheck.report.rows import Transition
from turncheck.text.money import rating_text


def suite(labels: dict[str, str] | None, **aggregates: float) -> ProtocolSuiteResult:
    return ProtocolSuiteResult(path="p.eval.yaml", name="p", model="m", provider="openai",
                               cassette=None, aggregate_labels=labels,
                               aggregates=ProtocolAggregates(**aggregates))


def test_a_suite_shows_what_it_declares_and_an_older_report_what_has_a_value() -> None:
    declared = suite({"interactive_reasoning": "MT-Bench score"}, final_f1=0.5)
    assert declared.labels() == {"interactive_reasoning": "MT-Bench score"}
    older = suite(None, interactive_reasoning=0.4, final_f1=0.5)
    assert list(older.labels()) == ["interactive_reasoning", "final_f1"]


def scorer(name: str, base: float, head: float, ratings: tuple[int, int] | None = None
           ) -> ScorerChange:
    return ScorerChange(id=name, name=name, type="judge_scale" if ratings else "match",
                        base=base, head=head, delta=head - base,
                        scale=[1, 10] if ratings else None,
                        base_rating=ratings[0] if ratings else None,
                        head_rating=ratings[1] if ratings else None)


def case(*turns: list[ScorerChange]) -> CaseComparison:
    return CaseComparison(
        id="q1", transition=Transition.BROKEN, regression=True, base_status=Status.PASS,
        head_status=Status.FAIL,
        turns=[TurnScoreComparison(id=f"t{n}", scorers=s) for n, s in enumerate(turns, 1)])


def test_a_broken_case_names_the_turn_and_scorer_that_fell_most() -> None:
    broken = case([scorer("style", 1.0, 0.9)],
                  [scorer("format", 1.0, 1.0), scorer("correctness", 7 / 9, 2 / 9, (8, 3))])
    assert broke_on(broken) == "broke on turn 2: correctness 8 → 3"
    assert broke_on(case([scorer("format", 1.0, 0.0)])) == "broke on turn 1: format 1.00 → 0.00"
    assert broke_on(case([scorer("format", 0.5, 0.5)])) is None


def test_ratings_read_on_their_scale() -> None:
    assert rating_text(8, [1, 10]) == "8/10"
    assert rating_text(7, [0, 10]) == "7 on 0–10"
    assert rating_text(7.25, [1, 10], mean=True) == "7.2/10"
    assert rating_text(3, [1, 5], mean=True) == "3.0/5"


def compared(base: Status | None, head: Status, error: str | None = None) -> str:
    """What the comment, the check and the annotations say of a case base → head."""
    from turncheck.compare.protocol import compare_cases
    from turncheck.render.severity import row_change
    from turncheck.report.protocol import CaseResult

    side = None if base is None else CaseResult(id="q1", status=base)
    return row_change(compare_cases(side, CaseResult(id="q1", status=head, error=error), []))


def test_a_case_reads_like_an_eval_in_every_state() -> None:
    """One change text for every kind of row: a case a budget stopped is not run (it
    said `fails`), one that errored at base says so (it said `was: fails`)."""
    assert compared(Status.PASS, Status.SKIPPED) == "not run: a budget stopped it"
    assert compared(Status.ERROR, Status.PASS) == "now passes (was: errors)"
    assert compared(Status.PASS, Status.FAIL) == "now fails (was: passes)"
    assert compared(None, Status.PASS) == "new: passes"
    assert compared(Status.FAIL, Status.FAIL) == "fails"
    assert compared(Status.PASS, Status.ERROR, "timeout") == "errors: timeout"
