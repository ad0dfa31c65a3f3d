"""turncheck: multi-turn LLM evals on every pull request.

The public API (docs/api.md): read and write reports, run suites, compare two run
reports, render the pull-request comment. Everything else is internal and may change.
Names load on first use, so `import turncheck` (and the command line's start-up) stays
light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turncheck.lazy import package_face

__all__ = [
    "Comparison",
    "Report",
    "ReportBundle",
    "ReportError",
    "__version__",
    "compare_reports",
    "read_report",
    "render_comment",
    "run_suites",
    "write_report",
]

_HOMES = {
    "__version__": "turncheck._version",
    "Comparison": "turncheck.report.comparison",
    "Report": "turncheck.report.run",
    "ReportBundle": "turncheck.report.bundle",
    "ReportError": "turncheck.report.files",
    "read_report": "turncheck.report.files",
    "write_report": "turncheck.report.files",
    "compare_reports": "turncheck.compare.comparison",
    "run_suites": "turncheck._api",
    "render_comment": "turncheck._api",
}

if TYPE_CHECKING:
    from turncheck._api import render_comment, run_suites
    from turncheck._version import __version__
    from turncheck.compare.comparison import compare_reports
    from turncheck.report.bundle import ReportBundle
    from turncheck.report.comparison import Comparison
    from turncheck.report.files import ReportError, read_report, write_report
    from turncheck.report.run import Report


__getattr__, _ = package_face(__name__, _HOMES, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
