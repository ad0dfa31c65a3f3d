"""The HTML report's rows, whatever their kind: each listed row (`report.rows.Row`: a run's,
its verdict its status; a comparison's, its verdict decided) with its kind's parts
(`html_kinds`), then what the comparison says of it, most severe first."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from turncheck.render.html_kinds import HtmlKind, Key, RowParts
from turncheck.render.html_views import RowView
from turncheck.render.prompt_changes import DiffBudget
from turncheck.render.severity import ORDER, Group, broke_on, eval_group
from turncheck.report.comparison import ComparedRow, Comparison
from turncheck.report.rows import Row, Transition
from turncheck.report.run import Report


@dataclass(frozen=True)
class _Listed:
    """A row to show: as every view lists it, its group's name, where its base is, and
    what the comparison says of it (None for a run alone)."""

    row: Row
    group: str
    base_key: Key
    compared: ComparedRow | None = None


def _compared(comparison: Comparison, kind: HtmlKind[Any]) -> Iterator[_Listed]:
    """The comparison's rows of `kind` that ran on a side (a sample file graded on
    neither has nothing to show: the comment's calibration section says why)."""
    for found in comparison.located():
        ran = found.row.base is not None or found.row.head is not None
        if found.row.kind is kind.kind and ran:
            yield _Listed(found.listed, found.group, (found.base_file, found.base_name),
                          found.row)


def _run(report: Report, kind: HtmlKind[Any]) -> Iterator[_Listed]:
    """A run alone: each row's verdict is its status."""
    names = {suite.path: suite.name for suite in [*report.suites, *report.protocols]}
    for row in report.rows():
        if row.kind is kind.kind:
            yield _Listed(row, names.get(row.file, row.file), (row.file, row.id))


def kind_rows(kind: HtmlKind[Any], comparison: Comparison | None, base: Report | None,
              head: Report | None) -> list[RowView]:
    """One kind's rows: the comparison's when there is one, else the one run's (the head's,
    else the base's, shown as the base)."""
    if comparison is not None:
        listed: Iterable[_Listed] = _compared(comparison, kind)
    else:
        side = head if head is not None else base
        listed = [] if side is None else _run(side, kind)
    base_results = {} if base is None else kind.results(base)
    head_results = {} if head is None else kind.results(head)
    parts = kind.parts(base, head, DiffBudget())
    rows = []
    for item in listed:
        head_key = (item.row.file, item.row.id)
        found = (base_results.get(item.base_key), head_results.get(head_key))
        view = _row_view(item, parts(item.base_key, head_key, *found), found)
        rows.append(view if item.compared is None else judged(view, item.compared))
    return by_severity(rows)


def _row_view(item: _Listed, parts: RowParts, found: tuple[object, object]) -> RowView:
    row = item.row
    status = row.status.value
    return RowView(
        key=f"{row.kind.value}:{row.file}:{row.id}", suite=row.file, name=row.id,
        verdict=status if row.verdict is None else row.verdict.value, status=status,
        transition="", facts=list(parts.facts), pairs=parts.pairs,
        base_samples=parts.base_samples, head_samples=parts.head_samples, error=parts.error,
        has_base=found[0] is not None, has_head=found[1] is not None, changes=parts.changes,
        suite_name=item.group, endings=parts.endings)


def judged(row: RowView, item: ComparedRow) -> RowView:
    """A row with what the comparison says of it, whatever its kind: its transition, where
    a broken row broke, the adjusted p-value, why, which sides it has, its severity."""
    row.transition = _unless_same(item.label, row.verdict)
    drop = broke_on(item) if item.transition is Transition.BROKEN else None
    row.facts += [drop] if drop else []
    if item.p_value is not None:
        row.facts.append(f"adjusted p = {item.p_value:.3g}")
    row.why = _reason(row.verdict, item.verdict_reason)
    row.has_base, row.has_head = item.base is not None, item.head is not None
    row.rank = ORDER.index(eval_group(item))
    return row


_GROUPS = {group.value: group for group in Group}
_STATUS_GROUP = {"error": Group.ERROR, "fail": Group.STILL_FAILING, "skipped": Group.NOT_RUN}
"""A row without a comparison: the severity of its head status."""


def _status_rank(verdict: str, status: str) -> int:
    if status == "error":
        return ORDER.index(Group.ERROR)
    if verdict in _GROUPS:
        return ORDER.index(_GROUPS[verdict])
    return ORDER.index(_STATUS_GROUP.get(status, Group.UNCHANGED))


def by_severity(rows: list[RowView]) -> list[RowView]:
    """Most severe first, in `severity.ORDER` as the comment's groups; document order within."""
    for row in rows:
        if row.rank == len(ORDER):
            row.rank = _status_rank(row.verdict, row.status)
    return sorted(rows, key=lambda row: row.rank)


def _unless_same(label: str, verdict: str) -> str:
    """The row's transition beside its verdict badge, unless it says the same word."""
    return "" if label.strip().lower() == verdict.lower() else label


def _reason(verdict: str, reason: str) -> str:
    """The comparison's reason for `verdict`, unless it only repeats the verdict."""
    said = reason.strip()
    if said.lower().removeprefix(verdict.lower()).strip(" :·-") == "":
        return ""
    # `one sample per side: broken` beside the `broken` badge says it once.
    return said.removesuffix(f": {verdict}")
