"""Tables as column specs: each kind (evals, protocol cases, graded sample files) lists
only its own columns; the columns every kind shows (the name, the counts of rows by
status, the spend) are written once here, so a column every kind's table shows is one
`Column` in one of the lists below.

A summary table has one `Tally` per suite or sample file (and one for the total): its
rows (`report.rows.Row`), their spend, and whatever the kind shows besides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from markupsafe import Markup, escape

from turncheck.render.display import DASH, Table, tokens_in_out
from turncheck.report.results import Status
from turncheck.report.rows import Row
from turncheck.report.spend import Usage, UsageAndCost
from turncheck.text.markdown import md_cell
from turncheck.text.money import usd

R = TypeVar("R")
D = TypeVar("D")


@dataclass(frozen=True)
class Column(Generic[R]):
    header: str
    cell: Callable[[R], str]
    numeric: bool = False
    """Right-aligned in Markdown."""
    untrusted: int | None = None
    """In Markdown, the cell comes from the pull request: escaped as a table cell and cut
    at this many characters (`md_cell`). Other cells are escaped for HTML only."""

    def markdown(self, row: R) -> Markup:
        value = self.cell(row)
        return md_cell(value, self.untrusted) if self.untrusted is not None else escape(value)


def column_table(columns: Sequence[Column[R]], rows: Iterable[R], total: R | None = None
                 ) -> Table:
    """The console table of `rows` (and the `total` row under a rule)."""
    return Table([column.header for column in columns],
                 [[column.cell(row) for column in columns] for row in rows],
                 None if total is None else [column.cell(total) for column in columns])


def markdown_table(columns: Sequence[Column[R]], rows: Iterable[R]) -> Markup:
    """The GitHub Markdown table of `rows` (a comment section's), each line ending in a
    line break."""
    lines = ["| " + " | ".join(column.header for column in columns) + " |",
             "|" + "|".join("---:" if column.numeric else "---" for column in columns) + "|",
             *("| " + " | ".join(column.markdown(row) for column in columns) + " |"
               for row in rows)]
    return Markup("".join(line + "\n" for line in lines))


@dataclass(frozen=True)
class Tally(Generic[D]):
    """One line of a summary table: a suite, a sample file or the total."""

    name: str
    rows: Sequence[Row]
    spent: UsageAndCost | None
    """None: nothing was spent that could be shown (a sample file not graded)."""
    detail: D

    def count(self, status: Status) -> int:
        return sum(row.count(status) for row in self.rows)


AnyTally = Tally[Any]
"""The columns every kind shows read no kind's own detail."""


def name_column(header: str) -> Column[AnyTally]:
    return Column(header, lambda tally: tally.name)


def size_column(header: str) -> Column[AnyTally]:
    return Column(header, lambda tally: str(len(tally.rows)))


def _count(status: Status) -> Callable[[AnyTally], str]:
    return lambda tally: str(tally.count(status))


def status_columns() -> list[Column[AnyTally]]:
    """Pass, Fail, Error: how many rows ended so."""
    return [Column("Pass", _count(Status.PASS)), Column("Fail", _count(Status.FAIL)),
            Column("Error", _count(Status.ERROR))]


def _tokens(usage: Usage) -> str:
    return tokens_in_out(usage.input_tokens, usage.output_tokens)


def _judge_cost(spent: UsageAndCost) -> str:
    unused = spent.judge_usage.total == 0 and spent.judge_cost_usd == 0
    return DASH if unused else usd(spent.judge_cost_usd)


def tally_spent(tally: AnyTally) -> UsageAndCost | None:
    return tally.spent


def _or_dash(spent: Callable[[R], UsageAndCost | None], cell: Callable[[UsageAndCost], str]
             ) -> Callable[[R], str]:
    def shown(row: R) -> str:
        found = spent(row)
        return DASH if found is None else cell(found)
    return shown


def model_spend_columns(spent: Callable[[R], UsageAndCost | None]) -> list[Column[R]]:
    """Every kind: the model's (a sample file's grader's) tokens in/out and cost; `spent`
    reads them from a row."""
    return [Column("Tokens in/out", _or_dash(spent, lambda s: _tokens(s.usage))),
            Column("Cost", _or_dash(spent, lambda s: usd(s.cost_usd)))]


def judge_spend_columns(spent: Callable[[R], UsageAndCost | None]) -> list[Column[R]]:
    """Kinds with a judge: its tokens in/out and cost (`—` for a judge never called)."""
    return [Column("Judge tokens", _or_dash(spent, lambda s: _tokens(s.judge_usage))),
            Column("Judge cost", _or_dash(spent, _judge_cost))]


def simulator_spend_columns(spent: Callable[[R], UsageAndCost | None]) -> list[Column[R]]:
    """Kinds with simulated users: the simulator's tokens in/out and cost, apart."""
    return [Column("Simulator tokens", _or_dash(spent, lambda s: _tokens(s.simulator_usage))),
            Column("Simulator cost", _or_dash(spent, _simulator_cost))]


def _simulator_cost(spent: UsageAndCost) -> str:
    unused = spent.simulator_usage.total == 0 and spent.simulator_cost_usd == 0
    return DASH if unused else usd(spent.simulator_cost_usd)


def summary_columns(name: str, size: str, own: Sequence[Column[Tally[D]]] = ()
                    ) -> list[Column[Tally[D]]]:
    """A summary table of suites whose rows pass, fail or error (evals, protocol cases):
    the name, the number of rows, how many ended each way, the kind's `own` columns,
    then the model's and the judge's spend."""
    return [name_column(name), size_column(size), *status_columns(), *own,
            *model_spend_columns(tally_spent), *judge_spend_columns(tally_spent)]
