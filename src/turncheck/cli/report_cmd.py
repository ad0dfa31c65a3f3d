"""`turncheck report`: the browsable HTML report of a JSON report (docs/html-report.md).

REPORT.json may be a run report (`run --json`), the action's report (`report-path`,
head and base in one file) or a comparison (`compare --json`, verdicts without
conversations). With `--base BASE.json` a run report is compared with its base.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from turncheck.cli.common import UsageError, usage_error, write_html
from turncheck.cli.compare_cmd import first_problem, load_report, read_report_text
from turncheck.compare.comparison import Comparison, compare_reports
from turncheck.providers.json_limits import JsonTooDeep, loads_bounded
from turncheck.report.run import Report

Model = TypeVar("Model", bound=BaseModel)


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
    text = read_report_text(path)
    try:
        kind = _kind(loads_bounded(text))
    except JsonTooDeep as exc:
        raise UsageError(f"{path} is not a turncheck report: {exc}") from None
    except ValueError:
        raise UsageError(f"{path} is not JSON") from None
    if kind == "comparison":
        if base_path is not None:
            raise UsageError("--base goes with a run report, not with a comparison")
        return None, None, _validated(Comparison, text, path, "comparison")
    if kind == "bundle":
        from turncheck.github.bundle import ReportBundle

        bundle = _validated(ReportBundle, text, path, "report")
        base = load_report(base_path) if base_path is not None else bundle.base
        return bundle.head, base, compare_reports(base, bundle.head, renames=bundle.renames,
                                                  removed=bundle.removed)
    head = load_report(path)
    base = load_report(base_path) if base_path is not None else None
    return head, base, compare_reports(base, head) if base is not None else None


def _kind(data: object) -> str:
    if isinstance(data, dict) and data.get("kind") == "turncheck-report":
        return "bundle"
    if isinstance(data, dict) and "has_base" in data:
        return "comparison"
    return "run"


def _validated(model: type[Model], text: str, path: Path, what: str) -> Model:
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"{path} is not a turncheck {what}: {first_problem(exc)}") from None
