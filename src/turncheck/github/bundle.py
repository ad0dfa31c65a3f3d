"""The report file the action writes: everything needed to compare and render later.

On fork pull requests the token cannot write, so the PR run uploads this file
as an artifact and a trusted `workflow_run` job renders and posts it. That job
treats the file as untrusted: size-capped, schema-validated, re-compared.
"""

from __future__ import annotations

import io
import zipfile

from turncheck.report.bundle import MAX_BUNDLE_BYTES, ReportBundle
from turncheck.report.files import ReportError, ReportTooLarge, parse_report

BUNDLE_FILE_NAME = "turncheck-report.json"

BundleError = ReportError
"""The bundle is missing, too large or not a turncheck report."""
BundleTooLarge = ReportTooLarge
"""The report is larger than MAX_BUNDLE_BYTES: refused before it is parsed."""


def bundle_from_json(data: bytes) -> ReportBundle:
    return parse_report(data, "the report", ReportBundle)


def bundle_from_zip(archive: bytes) -> ReportBundle:
    """The bundle inside an Actions artifact zip (upload-artifact zips the file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            member = next((m for m in zipped.infolist() if m.filename.endswith(".json")), None)
            if member is None:
                raise BundleError("the artifact holds no .json report")
            if member.file_size > MAX_BUNDLE_BYTES:
                raise BundleTooLarge(f"report is larger than {MAX_BUNDLE_BYTES} bytes")
            with zipped.open(member) as handle:
                data = handle.read(MAX_BUNDLE_BYTES + 1)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"the artifact is not a readable zip: {exc}") from None
    return bundle_from_json(data)
