"""`turncheck report`: the browsable HTML report of a JSON report (docs/html-report.md).

REPORT.json may be a run report (`run --json`), the action's report (`report-path`,
head and base in one file) or a comparison (`compare --json`, verdicts without
conversations). With `--base BASE.json` a run report is compared with its base.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turncheck.cli.common import UsageError, load_report, usage_error, write_html
from turncheck.compare.comparison import compare_reports
from turncheck.report.bundle import ReportBundle
from turncheck.report.comparison import Comparison
from turncheck.report.files import ReportError, read_report
from turncheck.report.run import Report


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report", help="write the browsable HTML report of a JSON report",
        description="Write one self-contained HTML file (no network; opens from disk or as "
        "an Actions artifact): every eval, protocol case and calibration sample, filterable "
        "by verdict, suite and status, with base and head conversations side by side.",
    )
    parser.add_argument("report", type=Path, metavar="REPORT.json",
                        help="a run report (run --json), the action's report (report-path) "
                        "or a comparison (compare --json)")
    parser.add_argument("--base", type=Path, metavar="BASE.json",
                        help="the base run report to compare a run report with")
    parser.add_argument("--out", type=Path, metavar="PATH",
                        help="where to write the HTML (default: REPORT.html beside REPORT.json)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    out = args.out or args.report.with_suffix(".html")
    try:
        head, base, comparison = load_sources(args.report, args.base)
        write_html(out, head=head, base=base, comparison=comparison)
    except UsageError as exc:
        return usage_error(str(exc))
    print(f"HTML report written to {out}", file=sys.stderr)
    return 0


def load_sources(path: Path, base_path: Path | None
                 ) -> tuple[Report | None, Report | None, Comparison | None]:
    """(head, base, comparison) from REPORT.json and `--base`."""
    try:
        document = read_report(path)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    if isinstance(document, Comparison):
        if base_path is not None:
            raise UsageError("--base goes with a run report, not with a comparison")
        return None, None, document
    if isinstance(document, ReportBundle):
        base = load_report(base_path) if base_path is not None else document.base
        return document.head, base, compare_reports(base, document.head,
                                                    renames=document.renames,
                                                    removed=document.removed)
    base = load_report(base_path) if base_path is not None else None
    return document, base, compare_reports(base, document) if base is not None else None
