"""The public API (docs/api.md): a few names re-exported from `turncheck`, loaded on first
use; the page's example runs as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import turncheck

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"


def test_the_public_names_are_exported_and_documented() -> None:
    assert set(turncheck.__all__) == {
        "Comparison", "Report", "ReportBundle", "ReportError", "__version__", "compare_reports",
        "read_report", "render_comment", "run_suites", "write_report"}
    page = PAGE.read_text(encoding="utf-8")
    for name in turncheck.__all__:
        assert name == "__version__" or f"`{name}" in page, name
        assert getattr(turncheck, name) is not None


def test_importing_turncheck_loads_none_of_its_parts() -> None:
    code = ("import sys, turncheck\n"
            "print(sorted(m for m in sys.modules if m.startswith('turncheck.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    # Only the few lines that load each public name on first use (turncheck.lazy).
    assert done.stdout.strip() == "['turncheck.lazy']"


def test_the_pages_example_runs_as_written(tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert example is not None
    shutil.copytree(ROOT / "examples" / "math", tmp_path / "examples" / "math")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", example.group(1)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "passing at head" in done.stdout
    assert turncheck.read_report(tmp_path / "head.json").kind == "run"
    assert "<!-- turncheck:comment -->" in (tmp_path / "comment.md").read_text(encoding="utf-8")


def test_the_report_package_is_the_face_of_its_documents() -> None:
    """`turncheck.report` names each document's model and the one reader and writer, as
    `inspect_ai.log` does."""
    import turncheck.report as report
    from turncheck.report.files import read_report, write_report
    from turncheck.report.run import Report

    assert (report.Report, report.read_report, report.write_report) == (
        Report, read_report, write_report)
    assert all(getattr(report, name) is not None for name in report.__all__)
