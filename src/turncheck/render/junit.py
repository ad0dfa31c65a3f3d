"""JUnit XML: one testsuite per suite file, one testcase per eval."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from turncheck.formats.files import write_text_confined
from turncheck.render.console import eval_lines, overall
from turncheck.report.run import Report, Status

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (model output may contain them)."""
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(report: Report) -> str:
    root = ET.Element(
        "testsuites",
        name="turncheck",
        tests=str(report.totals.evals),
        failures=str(report.totals.failed),
        errors=str(report.totals.errors),
        time=f"{report.duration_s:.3f}",
    )
    for suite in report.suites:
        failures = sum(e.status is Status.FAIL for e in suite.evals)
        errors = sum(e.status is Status.ERROR for e in suite.evals)
        skipped = sum(e.status is Status.SKIPPED for e in suite.evals)
        element = ET.SubElement(
            root,
            "testsuite",
            name=xml_safe(suite.name),
            file=xml_safe(suite.path),
            tests=str(len(suite.evals)),
            failures=str(failures),
            errors=str(errors),
            skipped=str(skipped),
        )
        for index, result in enumerate(suite.evals, 1):
            seconds = sum(t.latency_ms for t in result.turns) / 1000
            case = ET.SubElement(
                element,
                "testcase",
                name=xml_safe(result.name),
                classname=xml_safe(suite.name),
                file=xml_safe(suite.path),
                line=str(result.line),
                time=f"{seconds:.3f}",
            )
            if result.status is Status.FAIL:
                ET.SubElement(case, "failure", message=xml_safe(overall(result)))
            elif result.status is Status.ERROR:
                ET.SubElement(case, "error", message=xml_safe(result.error or "error"))
            elif result.status is Status.SKIPPED:
                ET.SubElement(case, "skipped", message=xml_safe(result.reason or "skipped"))
            ET.SubElement(case, "system-out").text = xml_safe("\n".join(eval_lines(index, result)))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Report, path: Path) -> None:
    write_text_confined(path, junit_xml(report))
