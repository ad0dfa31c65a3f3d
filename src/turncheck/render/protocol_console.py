"""Terminal output of protocol suites: per case the turns and a score table, then aggregates.

A suite shows only the aggregates it declares (`ProtocolSuiteResult.labels`), under its
own labels."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TextIO

from turncheck.render.columns import (
    Column,
    Tally,
    column_table,
    model_spend_columns,
    summary_columns,
)
from turncheck.render.display import (
    STATUS_LABEL,
    Table,
    console_heading,
    exchange_lines,
    or_dash,
    print_lines,
    samples_text,
)
from turncheck.report.protocol import (
    CaseResult,
    ProtocolAggregates,
    ProtocolSuiteResult,
    ProtocolTurn,
    ScorerResult,
)
from turncheck.report.results import Status
from turncheck.report.run import Report
from turncheck.report.spend import UsageAndCost
from turncheck.text.counts import counted
from turncheck.text.lines import one_line
from turncheck.text.money import rating_text
from turncheck.text.money import score_text as score

if TYPE_CHECKING:  # comparisons load scipy.stats; `run` only prints its own report
    pass

MAX_CELL_CHARS = 60


def signed(value: float | None) -> str:
    return or_dash(value, lambda v: f"{v:+.2f}")


def scorer_line(result: ScorerResult) -> str:
    mark = "💥" if result.error else "•"
    text = f"{mark} {result.id} ({result.type}, weight {result.weight:g}): {score(result.score)}"
    text += f" — {result.detail}"
    if result.error:
        text += f" — {result.error}"
    return text


SCORE = "interactive_reasoning"


def in_sentence(label: str) -> str:
    """`Weighted score` → `weighted score`; an acronym (`F1`, `IRS`) stays as it is."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def case_outcome(case: CaseResult, threshold: float | None,
                 labels: dict[str, str] | None = None) -> str:
    irs = case.aggregates.interactive_reasoning
    name = in_sentence((labels or {}).get(SCORE, "weighted score"))
    if case.status is Status.ERROR:
        return f"{STATUS_LABEL[Status.ERROR]}: {case.error}"
    if case.status is Status.FAIL:
        fail = STATUS_LABEL[Status.FAIL]
        return fail if threshold is None else f"{fail} ({name} {score(irs)} < {threshold:g})"
    return f"{STATUS_LABEL[Status.PASS]} ({name} {score(irs)})"


def _turn(turn: ProtocolTurn) -> UsageAndCost:
    return turn


TURN_COLUMNS: list[Column[ProtocolTurn]] = [
    Column("Turn", lambda turn: f"{turn.turn} {turn.id}"),
    Column("Variant", lambda turn: or_dash(turn.variant)),
    Column("Score", lambda turn: score(turn.score)),
    Column("Weight", lambda turn: f"{turn.weight:g}"),
    *model_spend_columns(_turn)]


def turn_table(case: CaseResult) -> Table:
    return column_table(TURN_COLUMNS, case.turns)


def aggregate_line(case: CaseResult, labels: dict[str, str]) -> str:
    """The case's declared aggregates (meta-cognition is the suite's: a case shows its
    self-assessment)."""
    a = case.aggregates
    parts = [f"{in_sentence(labels[SCORE])} {score(a.interactive_reasoning)}"]
    if "final_f1" in labels:
        parts.append(f"{in_sentence(labels['final_f1'])} {score(a.final_f1)}")
    if "self_correction" in labels and a.self_correction is not None:
        parts.append(f"{in_sentence(labels['self_correction'])} {signed(a.self_correction)}")
    if "meta_cognition" in labels and a.self_assessment_actual is not None:
        parts.append(f"self-assessment {score(a.self_assessment_estimate)} vs measured "
                     f"{score(a.self_assessment_actual)}")
    return " · ".join(parts)


def case_lines(index: int, case: CaseResult, threshold: float | None,
               transcript: bool = True, labels: dict[str, str] | None = None
               ) -> Iterable[str]:
    labels = {SCORE: "Weighted score"} if labels is None else labels
    yield f"Case {index}: {case.id}"
    if transcript:
        for turn in case.turns:
            variant = f" [variant {turn.variant}]" if turn.variant else ""
            yield f"  Turn {turn.turn} {turn.id}{variant}:"
            yield from exchange_lines(turn.prompt, turn.response)
            for result in turn.scorers:
                yield f"    {scorer_line(result)}"
    yield from turn_table(case).lines("  ")
    yield f"  {aggregate_line(case, labels)}"
    yield f"  Overall: {case_outcome(case, threshold, labels)}{samples_note(case)}"


def samples_note(case: CaseResult) -> str:
    """` · 3/5 samples passed, flaky; scores 1.00 0.25 …` for a repeated case (as for
    evals); the turns above are the first sample's."""
    repeats = case.repeats
    if repeats is None:
        return ""
    scores = " ".join(score(s.score) for s in case.samples)
    return f" · {samples_text(repeats.passes, repeats.samples, repeats.flaky)}; scores {scores}"


def suite_aggregate_lines(suite: ProtocolSuiteResult) -> Iterable[str]:
    a, labels = suite.aggregates, suite.labels()
    values = {SCORE: score(a.interactive_reasoning), "final_f1": score(a.final_f1),
              "self_correction": signed(a.self_correction)}
    parts = [f"{in_sentence(label)} {values[name]}" for name, label in labels.items()
             if name in values]
    yield f"Aggregates over {counted(a.cases, 'case')}: " + " · ".join(parts)
    yield from scorer_lines(suite)
    if "meta_cognition" not in labels:
        return
    name = labels["meta_cognition"]
    if a.meta_cognition is not None:
        yield (f"{name}, self-assessment vs measured over {a.meta_cognition_cases} cases: "
               f"r = {a.meta_cognition:+.3f}")
    else:
        yield f"{name}: n/a ({a.meta_cognition_note})"


def scorer_lines(suite: ProtocolSuiteResult) -> Iterable[str]:
    """Each declared scorer's mean over the cases; a judge scale in its own ratings."""
    parts = []
    for turn in suite.turns:
        for scorer in turn.scorers:
            if scorer.scale is not None and scorer.mean_rating is not None:
                value = rating_text(scorer.mean_rating, scorer.scale, mean=True)
            else:
                value = score(scorer.mean_score)
            parts.append(f"{turn.id}.{scorer.name} {value}")
    if parts:
        yield "Scorer means: " + " · ".join(parts)


def transcript(report: Report, out: TextIO, full: bool = True) -> None:
    for suite in report.protocols:
        print_lines([console_heading(suite.path, suite.name,
                                     f"{suite.model} via {suite.provider}", report.mode,
                                     "protocol")], out)
        for index, case in enumerate(suite.cases, 1):
            print_lines(case_lines(index, case, suite.pass_threshold, full, suite.labels()), out)
        print_lines(suite_aggregate_lines(suite), out)
        print(file=out)


Aggregated = Tally[ProtocolSuiteResult]
SHORT_HEADERS = {SCORE: "Score", "final_f1": "Final F1", "self_correction": "Self-corr.",
                 "meta_cognition": "Meta r"}
"""Headers when the suites of one table name an aggregate differently."""
_AGGREGATE_CELLS: dict[str, Callable[[ProtocolAggregates], str]] = {
    SCORE: lambda a: score(a.interactive_reasoning),
    "final_f1": lambda a: score(a.final_f1),
    "self_correction": lambda a: signed(a.self_correction),
    "meta_cognition": lambda a: "n/a" if a.meta_cognition is None else f"{a.meta_cognition:+.2f}",
}


def _aggregate_column(name: str, suites: list[ProtocolSuiteResult]) -> Column[Aggregated]:
    """One declared aggregate: under the suites' label when they agree; `—` for a suite
    that does not declare it."""
    labels = {s.labels()[name] for s in suites if name in s.labels()}
    header = labels.pop() if len(labels) == 1 else SHORT_HEADERS[name]
    cell = _AGGREGATE_CELLS[name]
    return Column(one_line(header, MAX_CELL_CHARS), lambda tally: cell(tally.detail.aggregates)
                  if name in tally.detail.labels() else "—")


def summary_columns_of(suites: list[ProtocolSuiteResult]) -> list[Column[Aggregated]]:
    declared = [name for name in _AGGREGATE_CELLS if any(name in s.labels() for s in suites)]
    return summary_columns("Protocol", "Cases",
                           [_aggregate_column(name, suites) for name in declared])


def summary_table(report: Report) -> Table:
    return column_table(summary_columns_of(report.protocols),
                        [Tally(suite.name, suite.rows(), suite, suite)
                         for suite in report.protocols])


def summary(report: Report, out: TextIO) -> None:
    if not report.protocols:
        return
    print_lines(summary_table(report).lines(), out)
    print(file=out)


def failed(report: Report) -> bool:
    """Whether a protocol case failed (below `pass_threshold`) or errored."""
    return any(s.aggregates.failed or s.aggregates.errors for s in report.protocols)
