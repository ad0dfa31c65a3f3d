"""The documents every view reads: the run report (evals, protocol cases, graded
sample files), the comparison, the estimate and the action's bundle.

The face of the package, as `inspect_ai.log` is of Inspect's logs: each document's
model and the one reader and writer of them all. Each name loads on first use: a
replay's start-up reads no comparison models.

Engine writes the documents, compare/render/github read them; nothing here imports a
layer above `stats/` and `text/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turncheck.lazy import package_face

_HOMES = {
    "CalibrationFileResult": "turncheck.report.calibration",
    "Comparison": "turncheck.report.comparison",
    "Estimate": "turncheck.report.estimate",
    "EvalResult": "turncheck.report.run",
    "ProtocolSuiteResult": "turncheck.report.protocol",
    "Report": "turncheck.report.run",
    "ReportBundle": "turncheck.report.bundle",
    "ReportError": "turncheck.report.files",
    "Status": "turncheck.report.results",
    "SuiteResult": "turncheck.report.run",
    "Usage": "turncheck.report.spend",
    "parse_report": "turncheck.report.files",
    "read_report": "turncheck.report.files",
    "write_report": "turncheck.report.files",
}

if TYPE_CHECKING:
    from turncheck.report.bundle import ReportBundle
    from turncheck.report.calibration import CalibrationFileResult
    from turncheck.report.comparison import Comparison
    from turncheck.report.estimate import Estimate
    from turncheck.report.files import ReportError, parse_report, read_report, write_report
    from turncheck.report.protocol import ProtocolSuiteResult
    from turncheck.report.results import Status
    from turncheck.report.run import EvalResult, Report, SuiteResult
    from turncheck.report.spend import Usage

__all__ = [
    "CalibrationFileResult",
    "Comparison",
    "Estimate",
    "EvalResult",
    "ProtocolSuiteResult",
    "Report",
    "ReportBundle",
    "ReportError",
    "Status",
    "SuiteResult",
    "Usage",
    "parse_report",
    "read_report",
    "write_report",
]

__getattr__, __dir__ = package_face(__name__, _HOMES, globals())
