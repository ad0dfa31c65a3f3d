"""`turncheck compare`: what changed between a base and a head run report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from turncheck.cli.common import (
    UsageError,
    load_report,
    untrusted_output,
    usage_error,
    write_html,
    write_json,
    write_output,
)
from turncheck.cli.config import add_config_option
from turncheck.compare.policy import FailOn, parse_fail_on
from turncheck.compare.verdict import Judgement, verdict_view
from turncheck.render.compare_console import comparison_text, exit_line
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import Comparison, CostThresholds
from turncheck.report.run import Report
from turncheck.text.lines import one_line


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
    parser.add_argument("--latency-threshold-percent", type=float, metavar="P",
                        help="with --fail-on latency: fail when an app suite's replies are "
                        "slower at head than base's by more than P%%, by a test over all "
                        "their turns (live and record runs only)")
    parser.add_argument("--fail-on", default=None, metavar="CONDITIONS",
                        help="exit 1 when any of these comma-separated conditions holds: "
                        "invalid (validation errors), error (evals that errored: "
                        "infrastructure), failure (a head eval failed), regression "
                        "(statistical regression of an eval or a suite), broken / "
                        "later-turn (one sample per side), likely-regression (watch tier), "
                        "flaky, cost (cost alert), calibration (grader agreement, see "
                        "--min-agreement), latency (an app's replies slower, live and "
                        "record runs only, see --latency-threshold-percent), or none; "
                        "default: the configuration's, else "
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
                      renames: dict[str, str], removed: Iterable[str] = (),
                      why_ran: Mapping[str, list[str]] | None = None) -> int:
    """Compare, print, write `--json`/`--markdown` and exit by `--fail-on` (shared by
    `compare` and `diff`). `why_ran`: suite path → why `diff` ran it although its own
    file did not change (a file it references or watches changed)."""
    try:
        conditions = conditions_from(args.fail_on)
        judgement = Judgement(conditions, thresholds_from(args, conditions),
                              calibration_thresholds_from(args))
        verdict = verdict_view(base, head, judgement, renames=renames, removed=removed)
        comparison, reasons = verdict.comparison, verdict.reasons
        if args.json is not None:
            write_json(args.json, comparison)
        if args.html is not None:
            write_html(args.html, head=head, base=base, comparison=comparison,
                       reasons=reasons, why_ran=why_ran)
    except UsageError as exc:
        return usage_error(str(exc))
    with untrusted_output(sys.stdout):  # paths and names come from the PR
        sys.stdout.write(comparison_text(comparison, reasons))
        for suite, why in sorted((why_ran or {}).items()):
            sys.stdout.write(one_line(f"ran because: {suite}: {'; '.join(why)}") + "\n")
    if args.markdown is not None:
        try:
            write_comment(comparison, reasons, base, head, args.markdown, why_ran or {})
        except UsageError as exc:
            return usage_error(str(exc))
    for reason in reasons:
        print(f"turncheck: failing: {reason}", file=sys.stderr)
    sys.stderr.flush()
    print(exit_line(comparison, conditions, reasons), flush=True)
    return verdict.exit_code


def write_comment(comparison: Comparison, reasons: list[str], base: Report, head: Report,
                  path: Path, why_ran: Mapping[str, list[str]]) -> None:
    from turncheck.render.comment import CommentContext, comment_markdown

    context = CommentContext(fail_reasons=reasons, head=head, base=base,
                             reasons={suite: list(why) for suite, why in why_ran.items()})
    write_output(path, comment_markdown(comparison, context))


# --- arguments and files ------------------------------------------------------------


def conditions_from(value: str | None) -> set[FailOn]:
    try:
        return set(parse_fail_on(value or ""))
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None


def thresholds_from(args: argparse.Namespace, conditions: set[FailOn]) -> CostThresholds:
    percent, dollars = args.cost_threshold_percent, args.cost_threshold_usd
    latency = getattr(args, "latency_threshold_percent", None)
    if any(value is not None and not value >= 0 for value in (percent, dollars, latency)):
        raise UsageError("cost and latency thresholds must be non-negative numbers")
    if FailOn.COST in conditions and percent is None and dollars is None:
        raise UsageError(
            "--fail-on cost needs --cost-threshold-percent or --cost-threshold-usd"
        )
    if FailOn.LATENCY in conditions and latency is None:
        raise UsageError("--fail-on latency needs --latency-threshold-percent")
    return CostThresholds(percent=percent, usd=dollars, latency_percent=latency)


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
