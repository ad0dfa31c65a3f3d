"""The words of the line `turncheck run` ends with: what failed, else what stopped the
run, else what ran. The command picks the exit code; these say why."""

from __future__ import annotations

from turncheck.report.results import Status
from turncheck.report.run import Report
from turncheck.text.counts import counted


def failure_reasons(report: Report, invalid_files: int, calibration_problems: int) -> list[str]:
    """Each kind of failure, counted (empty when nothing failed)."""
    totals = report.totals
    cases = [c for s in report.protocols for c in s.cases]
    bad_cases = sum(c.status in (Status.FAIL, Status.ERROR) for c in cases)
    reasons = [
        counted(invalid_files, "invalid file") if invalid_files else "",
        f"{totals.failed} of {counted(totals.evals, 'eval')} failed" if totals.failed else "",
        f"{counted(totals.errors, 'eval')} errored" if totals.errors else "",
        f"{bad_cases} of {counted(len(cases), 'protocol case')} failed or errored"
        if bad_cases else "",
        f"{counted(calibration_problems, 'grader calibration problem')} (above)"
        if calibration_problems else "",
    ]
    return [reason for reason in reasons if reason]


def budget_stop_text(report: Report) -> str:
    return (f"a budget stopped the run: {counted(report.totals.skipped, 'eval')} not run; "
            "nothing failed")


def success_text(report: Report) -> str:
    """What ran, when nothing failed."""
    cases = sum(len(s.cases) for s in report.protocols)
    samples = sum(len(c.samples) for c in report.calibrations)
    ran = [counted(report.totals.evals, "eval") if report.totals.evals else "",
           counted(cases, "protocol case") if cases else "",
           counted(samples, "calibration sample") if report.calibrations else ""]
    done = ", ".join(part for part in ran if part)
    return f"nothing failed ({done})" if done else "nothing ran"
