"""The report file the action writes: everything needed to compare and render later.

On fork pull requests the token cannot write, so the PR run uploads this file
as an artifact and a trusted `workflow_run` job renders and posts it. That job
treats the file as untrusted: size-capped, schema-validated, re-compared.
"""

from __future__ import annotations

import io
import zipfile
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turncheck.compare.pool import BasePool
from turncheck.report.run import Report
from turncheck.text.counts import counted

BUNDLE_SCHEMA_VERSION = 1
MAX_BUNDLE_BYTES = 20 * 1024 * 1024
BUNDLE_FILE_NAME = "turncheck-report.json"
MAX_REJECTIONS_SHOWN = 3


class BundleError(ValueError):
    """The bundle is missing, too large or not a turncheck report."""


class BundleTooLarge(BundleError):
    """The report is larger than MAX_BUNDLE_BYTES: refused before it is parsed."""


class BaselineInfo(BaseModel):
    """Where the base side of the comparison came from."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["rerun", "artifact", "none"]
    artifact: str | None = None
    run_id: int | None = None
    commit: str | None = None
    age_hours: float | None = None
    """How much older the baseline's commit is than the base commit (0 when it is the base)."""
    saved_tokens: int = 0
    """Tokens a live re-run of the baseline would have spent."""
    event: str | None = None
    """The event of the run that uploaded the artifact (push, schedule, workflow_dispatch)."""
    reason: str | None = None
    """Why no artifact was used, when `baseline: artifact` fell back to a re-run."""
    rejected: list[str] = Field(default_factory=list)
    """Artifacts passed over, each with why (e.g. uploaded by a fork's pull-request run)."""
    pool: BasePool | None = None
    """The trusted runs pooled into the base side and their estimated drift."""

    def describe(self) -> str:
        if self.source != "artifact":
            why = f" ({self.reason})" if self.reason else ""
            return f"baseline: {self.source}{why}" + self._rejections()
        age = "" if not self.age_hours else f", {self.age_hours:.1f} h older than base"
        event = f", a {self.event} run" if self.event else ""
        return (
            f"baseline: artifact {self.artifact} from run {self.run_id} "
            f"(commit {(self.commit or '?')[:12]}{event}{age}); "
            f"{self.saved_tokens:,} tokens saved" + self._pooled() + self._rejections()
        )

    def _pooled(self) -> str:
        if self.pool is None or self.pool.history_runs <= 1:
            return ""
        return (f"; {counted(self.pool.runs, 'run')} of its commit pooled, drift σ ≈ "
                f"{self.pool.drift_sigma:.2f} from {self.pool.history_runs} runs")

    def _rejections(self) -> str:
        if not self.rejected:
            return ""
        shown = "; ".join(self.rejected[:MAX_REJECTIONS_SHOWN])
        more = len(self.rejected) - MAX_REJECTIONS_SHOWN
        return f"; rejected {shown}" + (f" and {more} more" if more > 0 else "")


class ReportBundle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["turncheck-report"] = "turncheck-report"
    schema_version: int = BUNDLE_SCHEMA_VERSION
    repository: str
    event: str
    pull_number: int | None = None
    base_sha: str | None = None
    head_sha: str
    working_directory: str = "."
    renames: dict[str, str] = Field(default_factory=dict)
    """Head path → base path of renamed suites and sample files."""
    removed: list[str] = Field(default_factory=list)
    reasons: dict[str, list[str]] = Field(default_factory=dict)
    """Suite → why it ran when its own file did not change (a referenced file did)."""
    base_suites: list[str] = Field(default_factory=list)
    """Suites (as named at base) the comparison needs from the base side."""
    head: Report
    base: Report | None = None
    baseline: BaselineInfo | None = None
    live_tokens: int = 0
    """Tokens sent to providers over the network by this job (head and base runs)."""
    saved_tokens: int = 0
    """Tokens a live re-run of the baseline would have spent, saved by reusing an artifact."""


def bundle_from_json(data: bytes) -> ReportBundle:
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleTooLarge(f"report is larger than {MAX_BUNDLE_BYTES} bytes")
    try:
        bundle = ReportBundle.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BundleError(f"not a turncheck report: {where}: {first['msg']}") from None
    if bundle.schema_version > BUNDLE_SCHEMA_VERSION:
        raise BundleError(f"report schema version {bundle.schema_version} is newer than this "
                          f"turncheck reads ({BUNDLE_SCHEMA_VERSION})")
    return bundle


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
