"""The grader-calibration section of the PR comment: what `calibration.md.j2` shows.

The section belongs to the summary that is never dropped, so it is capped: at most
`MAX_FILES` files and `MAX_FLIPPED_ROWS` flipped samples; the per-sample tables of the
head run appear only at full detail (the step summary has them all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markupsafe import Markup

from turncheck.render.calibration_console import (
    BADGE_LABEL,
    distance,
    kappa_change,
    kappa_text,
    kappa_verdict,
)
from turncheck.render.columns import Column, markdown_table
from turncheck.render.display import Capped, or_dash, state_note
from turncheck.report.calibration import (
    CalibrationFileResult,
    GraderVerdict,
    percent_text,
)
from turncheck.report.calibration_comparison import (
    CalibrationComparison,
    CalibrationSide,
    FlippedSample,
)
from turncheck.report.run import Report
from turncheck.text.markdown import md_cell

MAX_FILES = 30
MAX_FLIPPED_ROWS = 30
MAX_SAMPLE_ROWS = 100
VERDICT_ICON = {
    GraderVerdict.AGREE: "✅ agree", GraderVerdict.DISAGREE: "❌ disagree",
    GraderVerdict.ERROR: "💥 error",
}


def _change(base: CalibrationSide | None, head: CalibrationSide | None,
            text: Callable[[CalibrationSide], str]) -> str:
    """`text` of base → head, or of the one side there is."""
    if base is not None and head is not None:
        return f"{text(base)} → {text(head)}"
    if head is not None:
        return text(head)
    return "—" if base is None else f"{text(base)} → —"


def _grader_label(item: CalibrationComparison) -> str:
    side = item.head or item.base
    if side is None or side.grader is None:
        return item.note or "not graded"
    label = f"{side.grader.model} · {side.grader.kind}"
    return label + (" (changed)" if item.grader_changed else "")


def _file_row(item: CalibrationComparison) -> dict[str, str]:
    base, head = item.base, item.head
    return {
        "path": item.path + state_note(item.state),
        "previous_path": item.previous_path or "",
        "grader": _grader_label(item),
        "agreement": _change(base, head, lambda side: percent_text(side.agreement_percent)),
        "distance": _change(base, head, lambda side: distance(side.mean_distance)),
        "errors": _change(base, head, lambda side: str(side.errors)),
        "kappa": _kappa_cell(item),
    }


def _kappa_cell(item: CalibrationComparison) -> str:
    """Weighted κ base → head with 95 % intervals; 📉 when head's is credibly lower."""
    kappa = item.kappa
    if kappa is None:
        side = item.head.agreement if item.head is not None else None
        if side is None:
            return "—"
        return kappa_text(side.weighted_kappa, side.weighted_kappa_low, side.weighted_kappa_high)
    cell = kappa_change(kappa)
    if kappa.lower:
        return f"{cell} · 📉 credibly lower ({kappa_verdict(kappa).split(':')[0]})"
    return cell


def _flipped_row(path: str, row: FlippedSample) -> dict[str, str]:
    return {
        "path": path,
        "id": row.id,
        "label": str(row.label),
        "scores": f"{or_dash(row.base_score)} → {or_dash(row.head_score)}",
        "verdicts": f"{VERDICT_ICON[row.base_verdict]} → {VERDICT_ICON[row.head_verdict]}",
        "reason": row.head_error or row.head_reason or "",
    }


def _head_samples(result: CalibrationFileResult) -> dict[str, Any]:
    samples = Capped.of(result.samples, MAX_SAMPLE_ROWS)
    rows = [
        {"id": row.id, "label": str(row.label), "score": or_dash(row.score),
         "distance": or_dash(row.distance), "badge": BADGE_LABEL[row.badge],
         "reason": row.error or row.reason or ""}
        for row in samples.shown
    ]
    return {"path": result.path, "table": markdown_table(SAMPLE_COLUMNS, rows),
            "hidden": samples.hidden}


Cells = dict[str, str]


def _path_cell(row: Cells) -> str:
    path = md_cell(row["path"], 200)
    return path + (Markup(" (was ") + md_cell(row["previous_path"], 200) + Markup(")")
                   if row["previous_path"] else "")


def _cell(key: str) -> Callable[[Cells], str]:
    return lambda row: row[key]


FILE_COLUMNS: list[Column[Cells]] = [
    Column("Sample file", _path_cell), Column("Grader", _cell("grader"), untrusted=200),
    Column("Agreement (base → head)", _cell("agreement"), numeric=True),
    Column("Weighted κ, 95 % interval (base → head)", _cell("kappa"), numeric=True),
    Column("Mean distance (base → head)", _cell("distance"), numeric=True),
    Column("Errors", _cell("errors"), numeric=True)]
FLIPPED_COLUMNS: list[Column[Cells]] = [
    Column("Sample file", _cell("path"), untrusted=200),
    Column("Sample", _cell("id"), untrusted=200),
    Column("Label", _cell("label"), numeric=True),
    Column("Score (base → head)", _cell("scores"), numeric=True),
    Column("Verdict (base → head)", _cell("verdicts")),
    Column("Grader's reason at head", _cell("reason"), untrusted=300)]
SAMPLE_COLUMNS: list[Column[Cells]] = [
    Column("Sample", _cell("id"), untrusted=200), Column("Label", _cell("label"), numeric=True),
    Column("Score", _cell("score"), numeric=True),
    Column("Distance", _cell("distance"), numeric=True), Column("Badge", _cell("badge")),
    Column("Grader's reason", _cell("reason"), untrusted=300)]


def calibration_view(items: list[CalibrationComparison], head: Report) -> dict[str, Any]:
    flipped = Capped.of([_flipped_row(item.path, row) for item in items
                         for row in item.flipped], MAX_FLIPPED_ROWS)
    graded = {result.path: result for result in head.calibrations if result.samples}
    files = Capped.of(items, MAX_FILES)
    return {
        "files": markdown_table(FILE_COLUMNS, [_file_row(item) for item in files.shown])
        if files.shown else "",
        "hidden_files": files.hidden, "file_columns": len(FILE_COLUMNS),
        "flipped": markdown_table(FLIPPED_COLUMNS, flipped.shown) if flipped.shown else "",
        "hidden_flipped": flipped.hidden, "flipped_columns": len(FLIPPED_COLUMNS),
        "details": [_head_samples(graded[item.path]) for item in files.shown
                    if item.path in graded],
        "sample_columns": len(SAMPLE_COLUMNS),
    }
