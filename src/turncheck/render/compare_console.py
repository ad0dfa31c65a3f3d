"""`turncheck compare`'s console output: the table of each kind's rows (column specs:
the file, the row and its transition are every kind's columns), totals, the calibration
lines, the verdict and the exit line."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from turncheck.compare.policy import FailOn, fail_reasons
from turncheck.render.app_calls import APP_CALLS_NOTE, app_call_suites
from turncheck.render.app_changes import console_lines
from turncheck.render.calibration_console import calibration_comparison_lines
from turncheck.render.columns import Column, column_table
from turncheck.render.headline import headline
from turncheck.render.latency import latency_lines
from turncheck.render.severity import findings, verdict_suffix
from turncheck.report.comparison import ComparedRow, Comparison, SuiteComparison
from turncheck.report.protocol_comparison import (
    ProtocolComparison,
    TurnScoreComparison,
)
from turncheck.report.results import Status
from turncheck.report.rows import ComparedSide, SuiteState
from turncheck.report.spend import Spend
from turncheck.text.counts import counted
from turncheck.text.lines import one_line
from turncheck.text.money import pct, score_change, score_text, signed_int, signed_usd, usd

P = TypeVar("P")

MAX_CELL_CHARS = 40



@dataclass(frozen=True)
class Line(Generic[P]):
    """One line of a comparison table: a row of its file, and the part of it the line
    shows (a protocol case's turn; an eval is one line)."""

    file: str
    row: ComparedRow
    part: P


def transition_cell(row: ComparedRow) -> str:
    """The row's transition, with its verdict when that is news (`broken` twice is not)."""
    suffix = verdict_suffix(row)
    return row.label if suffix == f" · {row.label}" else row.label + suffix


VERDICT_MEANINGS = {
    "regression": "worse beyond noise (adjusted p below the suite's alpha)",
    "likely-regression": "looks worse, not yet beyond noise",
    "improvement": "better beyond noise",
    "inconclusive": "the samples cannot tell a change from noise",
    "unreliable-baseline": "the base's samples vary too much to compare against",
    "broken": "passed at base, fails at head (one sample per side)",
    "fixed": "fails at base, passes at head (one sample per side)",
    "later-turn": "passes on a later turn (one sample per side)",
    "earlier-turn": "passes on an earlier turn (one sample per side)",
}


def transition_legend(rows: Sequence[ComparedRow]) -> Iterator[str]:
    """What the verdicts after `·` in the TRANSITION column mean, those the table shows."""
    shown = {row.verdict.value for row in rows
             if transition_cell(row) != row.label}
    meanings = [f"{verdict}: {meaning}" for verdict, meaning in VERDICT_MEANINGS.items()
                if verdict in shown]
    if meanings:
        yield ("TRANSITION is base → head; after ·, the verdict on the samples "
               "(docs/statistics.md): " + "; ".join(meanings))


def row_columns(file: str, name: str) -> list[Column[Line[Any]]]:
    """The columns every kind's comparison table starts with."""
    return [Column(file, lambda line: cell(line.file)),
            Column(name, lambda line: cell(line.row.name)),
            Column("TRANSITION", lambda line: transition_cell(line.row))]


EVAL_COLUMNS: list[Column[Line[None]]] = [
    *row_columns("SUITE", "EVAL"),
    Column("TURN", lambda line: f"{turn_cell(line.row.base)}→{turn_cell(line.row.head)}"),
    Column("TOKENS Δ", lambda line: signed_int(line.row.delta.tokens)),
    Column("COST Δ", lambda line: signed_usd(line.row.delta.cost_usd))]


def _variant(turn: TurnScoreComparison) -> str:
    base, head = turn.base_variant, turn.head_variant
    if base and head and base != head:
        return f"{base}→{head}"
    return head or base or "—"


PROTOCOL_COLUMNS: list[Column[Line[TurnScoreComparison]]] = [
    *row_columns("PROTOCOL", "CASE"),
    Column("TURN", lambda line: cell(line.part.id)),
    Column("VARIANT", lambda line: cell(_variant(line.part))),
    Column("SCORE", lambda line: f"{score_text(line.part.base)}→{score_text(line.part.head)}"),
    Column("Δ", lambda line: score_change(line.part.base, line.part.head))]


def rows_table(columns: Sequence[Column[Line[P]]], lines: Sequence[Line[P]]) -> list[str]:
    """A kind's table, when it has rows."""
    return column_table(columns, lines).lines() if lines else []


def comparison_text(comparison: Comparison, reasons: Sequence[str] | None = None) -> str:
    """The comparison's tables and totals; with the check's fail `reasons`, then the
    verdict line and the counts line the comment and the check run show."""
    lines = list(comparison_lines(comparison))
    if reasons is not None:
        lines += verdict_lines(comparison, reasons)
    return "".join(line + "\n" for line in lines)


def verdict_lines(comparison: Comparison, reasons: Sequence[str]) -> Iterator[str]:
    top = headline(comparison, findings(comparison), reasons)
    yield f"verdict: {one_line(top.title)}"
    yield one_line(top.counts.replace("**", ""))


def comparison_lines(comparison: Comparison) -> Iterator[str]:
    yield from body_lines(comparison)
    yield from totals_lines(comparison)
    yield from calibration_comparison_lines(comparison.calibration)
    yield from protocol_lines(comparison.protocols)


def body_lines(comparison: Comparison) -> Iterator[str]:
    for suite in comparison.suites:
        note = suite_note(suite)
        if note:
            yield note
    rows = [Line(s.path, e, None) for s in comparison.suites for e in s.evals]
    yield from rows_table(EVAL_COLUMNS, rows)
    yield from transition_legend([line.row for line in rows])
    for suite in comparison.suites:
        if suite.verdict.value in ("regression", "improvement"):
            change = (suite.pass_rate_change or 0) * 100
            yield (f"suite {cell(suite.path)}: suite-level {suite.verdict.value} "
                   f"(mean pass rate {change:+.1f} points over its evals, "
                   f"p = {suite.p_value or 0:.3g})")


def protocol_lines(protocols: ProtocolComparison | None) -> Iterator[str]:
    """Protocol suites: per case and turn, base → head, then each suite's aggregates."""
    if protocols is None:
        return
    yield ""
    yield from rows_table(PROTOCOL_COLUMNS, [Line(s.path, c, t) for s in protocols.suites
                                             for c in s.cases for t in c.turns])
    yield from transition_legend([case for s in protocols.suites for case in s.cases])
    for suite in protocols.suites:
        parts = [f"{cell(suite.labels.get(name, name.replace('_', ' ')))} "
                 f"{score_text(change.base)}→{score_text(change.head)} "
                 f"({score_change(change.base, change.head)})"
                 for name, change in suite.aggregates.items()]
        yield f"{cell(suite.path)}: " + "; ".join(parts)


def suite_note(suite: SuiteComparison) -> str | None:
    path = cell(suite.path)
    if suite.state is SuiteState.RENAMED:
        return f"suite {path}: renamed from {cell(suite.previous_path or '')}"
    if suite.state is SuiteState.NEW:
        return f"suite {path}: new"
    if suite.state is SuiteState.REMOVED:
        return f"suite {path}: removed" + (" (deleted in this PR)" if suite.deleted_in_pr else "")
    return None


def cell(text: str) -> str:
    """One short printable line: untrusted names must not break the table or the terminal."""
    return one_line(text, MAX_CELL_CHARS)


def turn_cell(side: ComparedSide | None) -> str:
    if side is None or side.status is None:
        return "–"
    if side.status is Status.PASS:
        return str(side.passed_on_turn)
    if side.status is Status.FAIL and side.failed_on_turn is not None:  # scripted turns
        return f"fail@{side.failed_on_turn}"
    return side.status.value


def totals_lines(comparison: Comparison) -> Iterator[str]:
    counts = comparison.totals.counts
    yield (
        f"head: {counted(counts.evals, 'eval')}, {counts.passed} passed, {counts.failed} failed, "
        f"{counted(counts.errors, 'error')}"
    )
    yield (
        f"changes: {counted(counts.regressions, 'regression')}, {counts.broken} broken, "
        f"{counts.fixed} fixed, {counts.still_failing} still failing, "
        f"{counts.turn_changed} turn changed, {counts.new} new, {counts.removed} removed"
    )
    yield from tokens_lines(comparison)
    yield cost_line(comparison)
    yield from app_calls_lines(comparison)
    yield from console_lines(comparison)
    yield from latency_lines(comparison)
    yield from notes_lines(comparison)


def app_calls_lines(comparison: Comparison) -> Iterator[str]:
    suites = app_call_suites(comparison.suites)
    if suites:
        yield f"note: {APP_CALLS_NOTE}"
    for name, change in suites:
        yield f"  {name}: {change}"


def tokens_lines(comparison: Comparison) -> Iterator[str]:
    """Model plus judge tokens, as the comment's tokens line counts them; a simulated
    user's apart, as the comment shows them."""
    totals = comparison.totals
    yield _count_line("tokens (model + judge)", totals.base, totals.head,
                      lambda side: side.tokens + side.judge_tokens)
    if _simulated(comparison):
        yield _count_line("tokens (simulated user)", totals.base, totals.head,
                          lambda side: side.simulator_tokens)


def _count_line(label: str, base: Spend | None, head: Spend | None,
                pick: Callable[[Spend], int]) -> str:
    before = pick(base) if base is not None else None
    after = pick(head) if head is not None else 0
    change = signed_int(after - (before or 0))
    return f"{label}: {'–' if before is None else before} → {after} ({change})"


def _simulated(comparison: Comparison) -> bool:
    return any(side is not None and bool(side.simulator_tokens or side.simulator_cost_usd)
               for side in (comparison.totals.base, comparison.totals.head))


def cost_line(comparison: Comparison) -> str:
    """The whole spend, as the comment's total: a simulated user's cost is part of it,
    and the label says so."""
    totals = comparison.totals
    base = usd(totals.base.total_cost_usd) if totals.base is not None else "–"
    head = usd(totals.head.total_cost_usd) if totals.head is not None else "–"
    change = signed_usd(totals.delta.total_cost_usd)
    if comparison.cost_delta_percent is not None:
        change += f", {pct(comparison.cost_delta_percent / 100)}"
    parts = "model + judge + simulated user" if _simulated(comparison) else "model + judge"
    return f"cost ({parts}): {base} → {head} ({change})"


def notes_lines(comparison: Comparison) -> Iterator[str]:
    source = comparison.price_source
    yield f"prices: {source.library} {source.version} at {source.timestamp}"
    if comparison.price_note:
        yield f"note: {comparison.price_note}"
    if comparison.cost_note:
        yield f"note: {comparison.cost_note}"
    errors = sum(d.is_error for d in comparison.diagnostics)
    if errors:
        yield f"validation problems at head: {errors}"
    if len(comparison.diagnostics) > errors:
        yield f"warnings at head: {len(comparison.diagnostics) - errors}"
    if comparison.base_commit or comparison.head_commit:  # local reports name none
        yield f"commits: {comparison.base_commit or '?'} → {comparison.head_commit or '?'}"
    if comparison.alert is not None:
        yield "COST ALERT: " + "; ".join(comparison.alert.reasons)


WHAT_A_REVIEWER_FAILS_ON = frozenset({FailOn.INVALID, FailOn.FAILURE, FailOn.LIKELY_REGRESSION})


def exit_line(comparison: Comparison, conditions: set[FailOn], reasons: list[str]) -> str:
    """The last line: why `compare` exits as it does."""
    named = ",".join(c.value for c in FailOn if c in conditions)
    if reasons:
        return f"Exit 1: --fail-on {named}: " + "; ".join(reasons)
    others = set(WHAT_A_REVIEWER_FAILS_ON) - conditions
    notable = fail_reasons(comparison, others)
    would = ",".join(c.value for c in FailOn if c in others)
    hint = f"; --fail-on {would} would fail it: {'; '.join(notable)}" if notable else ""
    if conditions:
        return f"Exit 0: no --fail-on condition holds ({named}){hint}"
    return "Exit 0: no --fail-on condition is set, so nothing fails the comparison" + hint
