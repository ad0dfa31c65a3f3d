"""`turncheck compare`: what changed between a base and a head run report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pydantic import ValidationError

from turncheck.cli.common import UsageError, usage_error, write_html
from turncheck.cli.config import add_config_option
from turncheck.compare.calibration import CalibrationThresholds
from turncheck.compare.comparison import (
    Comparison,
    CostThresholds,
    EvalComparison,
    EvalSide,
    SuiteComparison,
    SuiteState,
    compare_reports,
)
from turncheck.compare.policy import FailOn, fail_reasons, parse_fail_on
from turncheck.formats.files import (
    MAX_DATA_BYTES,
    read_text_bounded,
    refusal_reason,
    write_text_confined,
)
from turncheck.github.workflow import StopCommands
from turncheck.render.calibration_console import calibration_comparison_lines
from turncheck.render.headline import headline
from turncheck.render.protocol_console import protocol_comparison_lines
from turncheck.render.severity import findings, verdict_suffix
from turncheck.render.table_model import one_line, short_cell
from turncheck.report.run import SCHEMA_VERSION, Report, Status
from turncheck.text.counts import counted
from turncheck.text.money import usd

MAX_CELL_CHARS = 40


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare a head run report with its base",
        description="Compare two JSON run reports (from `turncheck run --json`): per-eval "
        "transitions, the turn each eval passed on, token and cost deltas, and a cost alert.",
    )
    parser.add_argument("base", type=Path, metavar="BASE.json", help="run report of the base")
    parser.add_argument("head", type=Path, metavar="HEAD.json", help="run report of the head")
    parser.add_argument("--rename", action="append", default=[], metavar="HEAD=BASE",
                        help="compare the head suite at path HEAD with the base suite at "
                        "path BASE; repeatable")
    add_comparison_options(parser)
    add_config_option(parser)  # fail-on and the thresholds default to the config's
    parser.set_defaults(handler=run)


def add_comparison_options(parser: argparse.ArgumentParser) -> None:
    """`--json`, `--markdown`, the cost thresholds, `--fail-on` and the calibration
    thresholds (`compare` and `diff`)."""
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the comparison here")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="write the browsable HTML report here: every eval's base and "
                        "head conversations side by side (see turncheck report)")
    parser.add_argument("--markdown", type=Path, metavar="PATH",
                        help="write here the pull-request comment the action would post "
                        "(GitHub Markdown), to preview it")
    parser.add_argument("--cost-threshold-percent", type=float, metavar="P",
                        help="alert when the total cost grows by more than P%% of the base")
    parser.add_argument("--cost-threshold-usd", type=float, metavar="USD",
                        help="alert when the total cost grows by more than USD dollars")
    parser.add_argument("--fail-on", default=None, metavar="CONDITIONS",
                        help="exit 1 when any of these comma-separated conditions holds: "
                        "invalid (validation errors), error (evals that errored: "
                        "infrastructure), failure (a head eval failed), regression "
                        "(statistical regression of an eval or a suite), broken / "
                        "later-turn (one sample per side), likely-regression (watch tier), "
                        "flaky, cost (cost alert), calibration (grader agreement, see "
                        "--min-agreement), or none; default: the configuration's, else "
                        "the action's default invalid,error,regression,broken")
    parser.add_argument("--min-agreement", type=float, metavar="PERCENT",
                        help="with --fail-on calibration: a sample file's head agreement must "
                        "be at least this (default: each grader's min_agreement)")
    parser.add_argument("--max-agreement-drop", type=float, metavar="POINTS",
                        help="with --fail-on calibration: a sample file's agreement may drop "
                        "by at most this many percentage points")
    parser.add_argument("--min-kappa", type=float, metavar="KAPPA",
                        help="with --fail-on calibration: a sample file's head quadratically "
                        "weighted kappa must be at least this (-1 to 1)")


def run(args: argparse.Namespace) -> int:
    try:
        renames = parse_renames(args.rename)
        base, head = load_report(args.base), load_report(args.head)
    except UsageError as exc:
        return usage_error(str(exc))
    return report_comparison(args, base, head, renames)


def report_comparison(args: argparse.Namespace, base: Report, head: Report,
                      renames: dict[str, str], removed: Iterable[str] = ()) -> int:
    """Compare, print, write `--json`/`--markdown` and exit by `--fail-on` (shared by
    `compare` and `diff`)."""
    try:
        conditions = conditions_from(args.fail_on)
        thresholds = thresholds_from(args, conditions)
        calibration = calibration_thresholds_from(args)
        comparison = compare_reports(base, head, renames=renames, removed=removed,
                                     thresholds=thresholds)
        if args.json is not None:
            write_json(comparison, args.json)
        if args.html is not None:
            write_html(args.html, head=head, base=base, comparison=comparison)
    except UsageError as exc:
        return usage_error(str(exc))
    reasons = fail_reasons(comparison, conditions, calibration=calibration)
    print_comparison(comparison, reasons)
    if args.markdown is not None:
        try:
            write_comment(comparison, reasons, base, head, args.markdown)
        except UsageError as exc:
            return usage_error(str(exc))
    for reason in reasons:
        print(f"turncheck: failing: {reason}", file=sys.stderr)
    sys.stderr.flush()
    print(exit_line(comparison, conditions, reasons), flush=True)
    return 1 if reasons else 0


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


def write_comment(comparison: Comparison, reasons: list[str], base: Report, head: Report,
                  path: Path) -> None:
    from turncheck.render.comment import CommentContext, render_comment

    context = CommentContext(fail_reasons=reasons, head=head, base=base)
    write_output(path, render_comment(comparison, context))


# --- arguments and files ------------------------------------------------------------


def conditions_from(value: str | None) -> set[FailOn]:
    try:
        return set(parse_fail_on(value or ""))
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None


def thresholds_from(args: argparse.Namespace, conditions: set[FailOn]) -> CostThresholds:
    percent, dollars = args.cost_threshold_percent, args.cost_threshold_usd
    if any(value is not None and not value >= 0 for value in (percent, dollars)):
        raise UsageError("cost thresholds must be non-negative numbers")
    if FailOn.COST in conditions and percent is None and dollars is None:
        raise UsageError(
            "--fail-on cost needs --cost-threshold-percent or --cost-threshold-usd"
        )
    return CostThresholds(percent=percent, usd=dollars)


def calibration_thresholds_from(args: argparse.Namespace) -> CalibrationThresholds:
    values = (args.min_agreement, args.max_agreement_drop)
    if any(value is not None and not 0 <= value <= 100 for value in values):
        raise UsageError("--min-agreement and --max-agreement-drop take 0 to 100")
    kappa = getattr(args, "min_kappa", None)
    if kappa is not None and not -1 <= kappa <= 1:
        raise UsageError("--min-kappa takes -1 to 1")
    return CalibrationThresholds(min_agreement=args.min_agreement,
                                 max_agreement_drop=args.max_agreement_drop, min_kappa=kappa)


def parse_renames(pairs: list[str]) -> dict[str, str]:
    renames = {}
    for pair in pairs:
        new, sep, old = pair.partition("=")
        if not sep or not new or not old:
            raise UsageError(f"--rename expects HEAD=BASE, got {pair!r}")
        renames[new] = old
    return renames


def read_report_text(path: Path) -> str:
    try:
        return read_text_bounded(path, limit=MAX_DATA_BYTES)
    except FileNotFoundError:
        raise UsageError(f"no such report: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = refusal_reason(exc) if isinstance(exc, OSError) else str(exc)
        raise UsageError(f"cannot read report {path}: {reason}") from None


def load_report(path: Path) -> Report:
    text = read_report_text(path)
    try:
        report = Report.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"{path} is not a turncheck run report: {first_problem(exc)}") from None
    if report.schema_version > SCHEMA_VERSION:
        raise UsageError(
            f"{path} has report schema version {report.schema_version}; this turncheck "
            f"reads up to {SCHEMA_VERSION}"
        )
    return report


def first_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


def write_json(comparison: Comparison, path: Path) -> None:
    write_output(path, comparison.model_dump_json(indent=2) + "\n")


def write_output(path: Path, text: str) -> None:
    try:
        write_text_confined(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {refusal_reason(exc)}") from None


# --- text output --------------------------------------------------------------------

HEADER = ("SUITE", "EVAL", "TRANSITION", "TURN", "TOKENS Δ", "COST Δ")


def print_comparison(comparison: Comparison, reasons: Sequence[str] | None = None) -> None:
    """The comparison's tables and totals; with the check's fail `reasons`, then the
    verdict line and the counts line the comment and the check run show."""
    lines = list(comparison_lines(comparison))
    if reasons is not None:
        lines += verdict_lines(comparison, reasons)
    text = "".join(line + "\n" for line in lines)
    # Paths, eval and model names come from the PR: keep them from running workflow commands.
    if os.environ.get("GITHUB_ACTIONS") == "true":
        with StopCommands(sys.stdout) as out:
            out.write(text)
    else:
        sys.stdout.write(text)


def verdict_lines(comparison: Comparison, reasons: Sequence[str]) -> Iterator[str]:
    top = headline(comparison, findings(comparison), reasons)
    yield f"verdict: {one_line(top.title)}"
    yield one_line(top.counts.replace("**", ""))


def comparison_lines(comparison: Comparison) -> Iterator[str]:
    yield from body_lines(comparison)
    yield from totals_lines(comparison)
    yield from calibration_comparison_lines(comparison.calibration)
    yield from protocol_comparison_lines(comparison.protocols)


def body_lines(comparison: Comparison) -> Iterator[str]:
    for suite in comparison.suites:
        note = suite_note(suite)
        if note:
            yield note
    yield from table([HEADER, *(row(e) for s in comparison.suites for e in s.evals)])
    for suite in comparison.suites:
        if suite.verdict.value in ("regression", "improvement"):
            change = (suite.pass_rate_change or 0) * 100
            yield (f"suite {cell(suite.path)}: suite-level {suite.verdict.value} "
                   f"(mean pass rate {change:+.1f} points over its evals, "
                   f"p = {suite.p_value or 0:.3g})")


def suite_note(suite: SuiteComparison) -> str | None:
    path = cell(suite.path)
    if suite.state is SuiteState.RENAMED:
        return f"suite {path}: renamed from {cell(suite.previous_path or '')}"
    if suite.state is SuiteState.NEW:
        return f"suite {path}: new"
    if suite.state is SuiteState.REMOVED:
        return f"suite {path}: removed" + (" (deleted in this PR)" if suite.deleted_in_pr else "")
    return None


def row(comparison: EvalComparison) -> tuple[str, ...]:
    label = comparison.label + verdict_suffix(comparison)
    turns = f"{turn_cell(comparison.base)}→{turn_cell(comparison.head)}"
    return (
        cell(comparison.suite_path), cell(comparison.name), label, turns,
        f"{comparison.delta.tokens:+d}", signed_usd(comparison.delta.cost_usd),
    )


def table(rows: Iterable[tuple[str, ...]]) -> Iterator[str]:
    rows = list(rows)
    widths = [max(len(r[column]) for r in rows) for column in range(len(rows[0]))]
    for cells in rows:
        yield "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


def cell(text: str) -> str:
    """One short printable line: untrusted names must not break the table or the terminal."""
    return short_cell(text, MAX_CELL_CHARS)


def turn_cell(side: EvalSide | None) -> str:
    if side is None:
        return "–"
    if side.status is Status.PASS:
        return str(side.passed_on_turn)
    return side.status.value


def signed_usd(cost: float | None) -> str:
    if cost is None:
        return "unpriced"
    return ("-" if cost < 0 else "+") + usd(abs(cost))


def totals_lines(comparison: Comparison) -> Iterator[str]:
    totals, counts = comparison.totals, comparison.totals.counts
    yield (
        f"head: {counted(counts.evals, 'eval')}, {counts.passed} passed, {counts.failed} failed, "
        f"{counted(counts.errors, 'error')}"
    )
    yield (
        f"changes: {counted(counts.regressions, 'regression')}, {counts.broken} broken, "
        f"{counts.fixed} fixed, {counts.still_failing} still failing, "
        f"{counts.turn_changed} turn changed, {counts.new} new, {counts.removed} removed"
    )
    base_tokens = str(totals.base.tokens) if totals.base is not None else "–"
    head_tokens = totals.head.tokens if totals.head is not None else 0
    yield f"tokens: {base_tokens} → {head_tokens} ({totals.delta.tokens:+d})"
    yield cost_line(comparison)
    yield from notes_lines(comparison)


def cost_line(comparison: Comparison) -> str:
    totals = comparison.totals
    base = usd(totals.base.total_cost_usd) if totals.base is not None else "–"
    head = usd(totals.head.total_cost_usd) if totals.head is not None else "–"
    change = signed_usd(totals.delta.total_cost_usd)
    if comparison.cost_delta_percent is not None:
        change += f", {comparison.cost_delta_percent:+.1f}%"
    return f"cost (model + judge): {base} → {head} ({change})"


def notes_lines(comparison: Comparison) -> Iterator[str]:
    source = comparison.price_source
    yield f"prices: {source.library} {source.version} at {source.timestamp}"
    if comparison.price_note:
        yield f"note: {comparison.price_note}"
    if comparison.cost_note:
        yield f"note: {comparison.cost_note}"
    if comparison.diagnostics:
        yield f"validation problems at head: {len(comparison.diagnostics)}"
    if comparison.base_commit or comparison.head_commit:  # local reports name none
        yield f"commits: {comparison.base_commit or '?'} → {comparison.head_commit or '?'}"
    if comparison.alert is not None:
        yield "COST ALERT: " + "; ".join(comparison.alert.reasons)
