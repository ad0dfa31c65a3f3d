"""Terminal output of protocol suites: per case the turns and a score table, then aggregates."""

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
from turncheck.render.table_model import (
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
    ProtocolTurn,
    ScorerResult,
)
from turncheck.report.run import Report, Status
from turncheck.report.spend import Spent
from turncheck.text.counts import counted
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


def case_outcome(case: CaseResult, threshold: float | None) -> str:
    irs = case.aggregates.interactive_reasoning
    if case.status is Status.ERROR:
        return f"{STATUS_LABEL[Status.ERROR]}: {case.error}"
    if case.status is Status.FAIL:
        fail = STATUS_LABEL[Status.FAIL]
        return fail if threshold is None else \
            f"{fail} (interactive reasoning {score(irs)} < {threshold:g})"
    return f"{STATUS_LABEL[Status.PASS]} (interactive reasoning {score(irs)})"


def _turn(turn: ProtocolTurn) -> Spent:
    return turn


TURN_COLUMNS: list[Column[ProtocolTurn]] = [
    Column("Turn", lambda turn: f"{turn.turn} {turn.id}"),
    Column("Variant", lambda turn: or_dash(turn.variant)),
    Column("Score", lambda turn: score(turn.score)),
    Column("Weight", lambda turn: f"{turn.weight:g}"),
    *model_spend_columns(_turn)]


def turn_table(case: CaseResult) -> Table:
    return column_table(TURN_COLUMNS, case.turns)


def aggregate_line(case: CaseResult) -> str:
    a = case.aggregates
    parts = [f"interactive reasoning {score(a.interactive_reasoning)}",
             f"final F1 {score(a.final_f1)}"]
    if a.self_correction is not None:
        parts.append(f"self-correction {signed(a.self_correction)}")
    if a.self_assessment_actual is not None:
        parts.append(f"self-assessment {score(a.self_assessment_estimate)} vs measured "
                     f"{score(a.self_assessment_actual)}")
    return " · ".join(parts)


def case_lines(index: int, case: CaseResult, threshold: float | None,
               transcript: bool = True) -> Iterable[str]:
    yield f"Case {index}: {case.id}"
    if transcript:
        for turn in case.turns:
            variant = f" [variant {turn.variant}]" if turn.variant else ""
            yield f"  Turn {turn.turn} {turn.id}{variant}:"
            yield from exchange_lines(turn.prompt, turn.response)
            for result in turn.scorers:
                yield f"    {scorer_line(result)}"
    yield from turn_table(case).lines("  ")
    yield f"  {aggregate_line(case)}"
    yield f"  Overall: {case_outcome(case, threshold)}{samples_note(case)}"


def samples_note(case: CaseResult) -> str:
    """` · 3/5 samples passed, flaky; scores 1.00 0.25 …` for a repeated case (as for
    evals); the turns above are the first sample's."""
    repeats = case.repeats
    if repeats is None:
        return ""
    scores = " ".join(score(s.score) for s in case.samples)
    return f" · {samples_text(repeats.passes, repeats.samples, repeats.flaky)}; scores {scores}"


def suite_aggregate_lines(aggregates: ProtocolAggregates) -> Iterable[str]:
    a = aggregates
    yield (f"Aggregates over {counted(a.cases, 'case')}: interactive reasoning "
           f"{score(a.interactive_reasoning)} · final F1 {score(a.final_f1)} · "
           f"self-correction {signed(a.self_correction)}")
    if a.meta_cognition is not None:
        yield (f"Meta-cognition (self-assessment vs measured, {a.meta_cognition_cases} cases): "
               f"r = {a.meta_cognition:+.3f}")
    else:
        yield f"Meta-cognition: n/a ({a.meta_cognition_note})"


def transcript(report: Report, out: TextIO, full: bool = True) -> None:
    for suite in report.protocols:
        print_lines([console_heading(suite.path, suite.name,
                                     f"{suite.model} via {suite.provider}", report.mode,
                                     "protocol")], out)
        for index, case in enumerate(suite.cases, 1):
            print_lines(case_lines(index, case, suite.pass_threshold, full), out)
        print_lines(suite_aggregate_lines(suite.aggregates), out)
        print(file=out)


Aggregated = Tally[ProtocolAggregates]


def _aggregate(cell: Callable[[ProtocolAggregates], str]) -> Callable[[Aggregated], str]:
    return lambda tally: cell(tally.detail)


SUMMARY_COLUMNS: list[Column[Aggregated]] = summary_columns("Protocol", "Cases", [
    Column("Reasoning", _aggregate(lambda a: score(a.interactive_reasoning))),
    Column("Final F1", _aggregate(lambda a: score(a.final_f1))),
    Column("Self-corr.", _aggregate(lambda a: signed(a.self_correction))),
    Column("Meta r", _aggregate(
        lambda a: "n/a" if a.meta_cognition is None else f"{a.meta_cognition:+.2f}"))])


def summary_table(report: Report) -> Table:
    return column_table(SUMMARY_COLUMNS, [Tally(suite.name, suite.rows(), suite, suite.aggregates)
                                          for suite in report.protocols])


def summary(report: Report, out: TextIO) -> None:
    if not report.protocols:
        return
    print_lines(summary_table(report).lines(), out)
    print(file=out)


def failed(report: Report) -> bool:
    """Whether a protocol case failed (below `pass_threshold`) or errored."""
    return any(s.aggregates.failed or s.aggregates.errors for s in report.protocols)
