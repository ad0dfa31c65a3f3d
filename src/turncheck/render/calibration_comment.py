"""The grader-calibration section of the PR comment: what `calibration.md.j2` shows.

The section belongs to the summary that is never dropped, so it is capped: at most
`MAX_FILES` files and `MAX_FLIPPED_ROWS` flipped samples; the per-sample tables of the
head run appear only at full detail (the step summary has them all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turncheck.render.calibration_console import (
    BADGE_LABEL,
    distance,
    kappa_change,
    kappa_text,
    kappa_verdict,
)
from turncheck.render.table_model import Capped, or_dash, state_note
from turncheck.report.calibration import (
    CalibrationFileResult,
    Verdict,
    percent_text,
)
from turncheck.report.calibration_comparison import (
    CalibrationComparison,
    CalibrationSide,
    FlippedSample,
)
from turncheck.report.run import Report

MAX_FILES = 30
MAX_FLIPPED_ROWS = 30
MAX_SAMPLE_ROWS = 100
VERDICT_ICON = {
    Verdict.AGREE: "✅ agree", Verdict.DISAGREE: "❌ disagree", Verdict.ERROR: "💥 error",
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
    return {"path": result.path, "rows": rows, "hidden": samples.hidden}


def calibration_view(items: list[CalibrationComparison], head: Report) -> dict[str, Any]:
    flipped = Capped.of([_flipped_row(item.path, row) for item in items
                         for row in item.flipped], MAX_FLIPPED_ROWS)
    graded = {result.path: result for result in head.calibrations if result.samples}
    files = Capped.of(items, MAX_FILES)
    return {
        "files": [_file_row(item) for item in files.shown],
        "hidden_files": files.hidden,
        "flipped": flipped.shown,
        "hidden_flipped": flipped.hidden,
        "details": [_head_samples(graded[item.path]) for item in files.shown
                    if item.path in graded],
    }
