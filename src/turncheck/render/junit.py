"""JUnit XML: one testsuite per suite file (evals, protocol cases) and per graded sample
file, one testcase per row: each eval, each protocol case, each sample file (its
agreement with the labels)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from turncheck.formats.files import write_text_confined
from turncheck.gc_pause import gc_paused
from turncheck.render.console import eval_lines, overall
from turncheck.report.calibration import CalibrationFileResult
from turncheck.report.protocol import ProtocolSuiteResult
from turncheck.report.results import Status, TurnResult
from turncheck.report.run import EvalResult, Report, SuiteResult

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (model output may contain them)."""
    return _NOT_XML.sub("\ufffd", text)


@dataclass(frozen=True)
class _Case:
    """One testcase, whatever kind of row it shows."""

    name: str
    line: int | None
    status: Status
    seconds: float
    message: str
    """Why it failed, errored or was skipped."""
    output: Sequence[str]


@dataclass(frozen=True)
class _Suite:
    name: str
    file: str
    cases: list[_Case]


def _seconds(turns: Iterable[TurnResult]) -> float:
    return sum(t.latency_ms for t in turns) / 1000


def _eval_suite(suite: SuiteResult) -> _Suite:
    return _Suite(suite.name, suite.path, [
        _Case(result.name, result.line, result.status, _seconds(result.turns),
              _eval_message(result), list(eval_lines(index, result)))
        for index, result in enumerate(suite.evals, 1)])


def _eval_message(result: EvalResult) -> str:
    if result.status is Status.ERROR:
        return result.error or "error"
    if result.status is Status.SKIPPED:
        return result.reason or "skipped"
    return overall(result)


def _protocol_suite(suite: ProtocolSuiteResult) -> _Suite:
    """The cases' lines are in the cases file when the suite has one."""
    from turncheck.render.protocol_console import case_lines, case_outcome  # only for them

    file = suite.path if suite.cases_file is None else \
        (PurePosixPath(suite.path).parent / suite.cases_file).as_posix()
    labels = suite.labels()
    return _Suite(suite.name, file, [
        _Case(case.id, case.line, case.status, _seconds(case.turns),
              (case.reason or "skipped") if case.status is Status.SKIPPED
              else case_outcome(case, suite.pass_threshold, labels),
              list(case_lines(index, case, suite.pass_threshold, labels=labels)))
        for index, case in enumerate(suite.cases, 1)])


def _sample_file(result: CalibrationFileResult, mode: str) -> _Suite:
    from turncheck.render.calibration_console import file_footer, file_lines  # only for them

    row = result.row()
    seconds = sum(grade.latency_ms for grade in result.samples) / 1000
    return _Suite(result.path, result.path, [
        _Case(result.path, None, row.status, seconds, file_footer(result),
              list(file_lines(result, mode)))])


def _suites(report: Report) -> Iterator[_Suite]:
    yield from (_eval_suite(suite) for suite in report.suites)
    yield from (_protocol_suite(suite) for suite in report.protocols)
    yield from (_sample_file(result, report.mode) for result in report.calibrations
                if result.graded)


def _counts(cases: Sequence[_Case]) -> dict[str, str]:
    return {"tests": str(len(cases)),
            "failures": str(sum(c.status is Status.FAIL for c in cases)),
            "errors": str(sum(c.status is Status.ERROR for c in cases)),
            "skipped": str(sum(c.status is Status.SKIPPED for c in cases))}


_OUTCOME = {Status.FAIL: "failure", Status.ERROR: "error", Status.SKIPPED: "skipped"}


def _testcase(parent: ET.Element, suite: _Suite, case: _Case) -> None:
    attributes = {"name": xml_safe(case.name), "classname": xml_safe(suite.name),
                  "file": xml_safe(suite.file)}
    if case.line is not None:
        attributes["line"] = str(case.line)
    attributes["time"] = f"{case.seconds:.3f}"
    element = ET.SubElement(parent, "testcase", attributes)
    outcome = _OUTCOME.get(case.status)
    if outcome is not None:
        ET.SubElement(element, outcome, message=xml_safe(case.message))
    ET.SubElement(element, "system-out").text = xml_safe("\n".join(case.output))


def junit_xml(report: Report) -> str:
    suites = list(_suites(report))
    every = [case for suite in suites for case in suite.cases]
    counts = _counts(every)
    root = ET.Element("testsuites", name="turncheck", tests=counts["tests"],
                      failures=counts["failures"], errors=counts["errors"],
                      time=f"{report.duration_s:.3f}")
    for suite in suites:
        element = ET.SubElement(root, "testsuite", {
            "name": xml_safe(suite.name), "file": xml_safe(suite.file), **_counts(suite.cases)})
        for case in suite.cases:
            _testcase(element, suite, case)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Report, path: Path) -> None:
    with gc_paused():  # an element per value: see `report/files.py:document_json`
        text = junit_xml(report)
    write_text_confined(path, text)
