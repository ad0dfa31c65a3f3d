"""Terminal output of grader calibration: per-sample rows per file, then a summary table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from turncheck.render.columns import (
    Column,
    Tally,
    column_table,
    model_spend_columns,
    name_column,
    tally_spent,
)
from turncheck.render.display import (
    console_heading,
    or_dash,
    print_lines,
)
from turncheck.report.calibration import (
    Badge,
    CalibrationFileResult,
    SampleGrade,
    percent_text,
)
from turncheck.report.spend import Usage, UsageAndCost, add_costs
from turncheck.text.counts import counted
from turncheck.text.lines import one_line, terminal_safe
from turncheck.text.money import score_text

if TYPE_CHECKING:  # comparisons load scipy.stats; `run` only prints its own report
    from turncheck.report.calibration_comparison import CalibrationComparison, KappaComparison

BADGE_LABEL = {
    Badge.AGREE: "✅ agree",
    Badge.OFF: "🟡 off",
    Badge.FAR: "🔴 far",
    Badge.ERROR: "💥 error",
}
MAX_REASON_CHARS = 100
MAX_ERRORS_SHOWN = 5

def distance(value: float | None) -> str:
    return score_text(value)


SAMPLE_COLUMNS: list[Column[SampleGrade]] = [
    Column("Sample", lambda row: row.id), Column("Label", lambda row: str(row.label)),
    Column("Score", lambda row: or_dash(row.score)),
    Column("Distance", lambda row: or_dash(row.distance)),
    Column("Badge", lambda row: BADGE_LABEL[row.badge]),
    *model_spend_columns(lambda row: row.spent),
    Column("Reason", lambda row: one_line(row.error if row.error is not None
                                          else (row.reason or ""), MAX_REASON_CHARS))]


def file_header(result: CalibrationFileResult, mode: str) -> str:
    grader = result.grader
    if grader is None:
        return console_heading(result.path, result.note or "not graded",
                               f"{result.valid_samples} valid samples")
    version = [grader.prompt_version] if grader.prompt_version else []
    return console_heading(result.path, f"grader {grader.model} via {grader.provider}",
                           grader.kind, *version, mode)


def file_footer(result: CalibrationFileResult) -> str:
    parts = [
        f"Agreement {percent_text(result.agreement_percent)} "
        f"({result.agreed} of {len(result.samples)})",
        f"mean distance {distance(result.mean_distance)}",
        counted(result.errors, "error"),
    ]
    if result.min_agreement is not None:
        parts.append(f"minimum {percent_text(result.min_agreement)}")
    if result.skipped_samples:
        parts.append(f"{counted(result.skipped_samples, 'invalid sample')} skipped")
    return " · ".join(parts)


def file_lines(result: CalibrationFileResult, mode: str) -> Iterable[str]:
    yield terminal_safe(file_header(result, mode))
    if not result.samples:
        if result.grader is not None and result.note:
            yield terminal_safe(result.note)
        return
    yield from column_table(SAMPLE_COLUMNS, result.samples).lines()
    yield file_footer(result)
    yield from error_lines(result.samples)


def error_lines(rows: Sequence[SampleGrade]) -> Iterable[str]:
    """Error rows in full (the table clips them), the first `MAX_ERRORS_SHOWN`."""
    errors = [row for row in rows if row.error is not None]
    for row in errors[:MAX_ERRORS_SHOWN]:
        yield terminal_safe(f"  💥 {row.id}: {row.error}".replace("\n", " "))
    if len(errors) > MAX_ERRORS_SHOWN:
        yield f"  … and {counted(len(errors) - MAX_ERRORS_SHOWN, 'more error')}"


@dataclass(frozen=True)
class _Figures:
    """What a sample file's line of the summary shows besides its rows and spend."""

    samples: int
    agreement: str
    distance: str
    errors: str


NOT_GRADED = "not graded"


def _file_tally(result: CalibrationFileResult) -> Tally[_Figures]:
    if not result.graded:
        return Tally(result.path, [], None, _Figures(result.valid_samples, NOT_GRADED, "—", "—"))
    figures = _Figures(len(result.samples), percent_text(result.agreement_percent),
                       distance(result.mean_distance), str(result.errors))
    return Tally(result.path, [result.row()], result.spent, figures)


def _total_tally(results: Sequence[CalibrationFileResult]) -> Tally[_Figures]:
    graded = [r for r in results if r.graded]
    rows = [row for r in graded for row in r.samples]
    scored = [row.distance for row in rows if row.distance is not None]
    agreed = sum(r.agreed for r in graded)
    figures = _Figures(len(rows), percent_text(100 * agreed / len(rows) if rows else None),
                       distance(sum(scored) / len(scored) if scored else None),
                       str(sum(r.errors for r in graded)))
    spent = UsageAndCost(usage=sum((r.spent.usage for r in graded), Usage()),
                  cost_usd=add_costs([r.cost_usd for r in graded])) if graded else None
    return Tally("Total", [r.row() for r in graded], spent, figures)


def _figure(header: str, cell: Callable[[_Figures], str]) -> Column[Tally[_Figures]]:
    return Column(header, lambda tally: cell(tally.detail))


SUMMARY_COLUMNS: list[Column[Tally[_Figures]]] = [
    name_column("Sample file"), _figure("Samples", lambda f: str(f.samples)),
    _figure("Agreement", lambda f: f.agreement),
    _figure("Mean distance", lambda f: f.distance), _figure("Errors", lambda f: f.errors),
    *model_spend_columns(tally_spent)]


def summary_lines(results: Sequence[CalibrationFileResult]) -> list[str]:
    # A total of nothing graded ("Total 0" under "6 … not graded") says nothing.
    total = _total_tally(results) if any(r.graded for r in results) else None
    return column_table(SUMMARY_COLUMNS, [_file_tally(r) for r in results], total).lines()


def print_calibrations(
    results: Sequence[CalibrationFileResult], mode: str, out: TextIO, quiet: bool = False
) -> None:
    """Per-file sample tables (unless `quiet`), then the summary table."""
    if not results:
        return
    if not quiet:
        for result in results:
            print_lines(file_lines(result, mode), out)
            print(file=out)
    print_lines(summary_lines(results), out)


class SampleProgress:
    """One `[i/N] badge file › sample` line per graded sample, on stderr."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.done = 0
        self.out = out

    def advance(self, result: CalibrationFileResult, row: SampleGrade) -> None:
        self.done += 1
        label = f"[{self.done}/{self.total}] {row.badge.value:<5} {result.path} › {row.id}"
        print(one_line(label, 160), file=self.out, flush=True)


def kappa_text(value: float | None, low: float | None = None, high: float | None = None) -> str:
    if value is None:
        return "—"
    if low is None or high is None:
        return score_text(value)
    return f"{score_text(value)} [{score_text(low)}, {score_text(high)}]"


def kappa_change(kappa: KappaComparison) -> str:
    """`0.82 [0.61, 0.95] → 0.40 [0.10, 0.70]`: weighted κ base → head with intervals."""
    return (f"{kappa_text(kappa.base, kappa.base_low, kappa.base_high)} → "
            f"{kappa_text(kappa.head, kappa.head_low, kappa.head_high)}")


def kappa_verdict(kappa: KappaComparison) -> str:
    """Whether head's κ is credibly lower, with the interval of the difference."""
    if kappa.delta is None:
        return "κ change undefined"
    difference = f"Δ {kappa_text(kappa.delta, kappa.delta_low, kappa.delta_high)}"
    if kappa.delta_low is None:
        return f"{difference}: too few samples scored at both sides to tell"
    return f"{difference}: " + ("credibly lower" if kappa.lower else "not credibly lower")


def calibration_comparison_lines(items: Sequence[CalibrationComparison]) -> list[str]:
    """One line per sample file (agreement base → head), one per flipped sample."""
    lines = []
    for item in items:
        base = None if item.base is None else percent_text(item.base.agreement_percent)
        head = "not graded" if item.head is None else percent_text(item.head.agreement_percent)
        change = head if base is None else f"{base} → {head}"
        kappa = "" if item.kappa is None else (
            f", weighted κ {kappa_change(item.kappa)} ({kappa_verdict(item.kappa)})")
        lines.append(terminal_safe(f"calibration {item.path}: agreement {change}{kappa}, "
                                   f"{counted(len(item.flipped), 'sample')} flipped"))
        lines += [
            terminal_safe(f"  {row.id}: {row.base_verdict.value} → {row.head_verdict.value} "
                          f"(label {row.label}, score {row.base_score} → {row.head_score})")
            for row in item.flipped
        ]
    return lines
