"""The documents every view reads: the run report (evals, protocol cases, graded
sample files), the comparison, the estimate and the action's bundle.

The face of the package, as `inspect_ai.log` is of Inspect's logs: each document's
model and the one reader and writer of them all.

Engine writes the documents, compare/render/github read them; nothing here imports a
layer above `stats/` and `text/`.
"""

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
