"""The action's report file (the bundle): head and base run reports and what the
comparison needs besides them (renames, removed suites, where the baseline came from).

On fork pull requests the PR run uploads it as an artifact and a trusted `workflow_run`
job renders and posts it: it is read as untrusted (`report/files.py`).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from turncheck.report.model import ReportModel
from turncheck.report.pool import BasePool
from turncheck.report.run import Report
from turncheck.text.counts import counted

BUNDLE_KIND: Final = "turncheck-report"
BUNDLE_SCHEMA_VERSION = 1
MAX_BUNDLE_BYTES = 20 * 1024 * 1024
MAX_REJECTIONS_SHOWN = 3


class BaselineInfo(ReportModel):
    """Where the base side of the comparison came from."""

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


class ReportBundle(ReportModel):
    kind: Literal["turncheck-report"] = BUNDLE_KIND
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
    run_id: str | None = None
    """The Actions run that wrote this report (`GITHUB_RUN_ID`)."""
    run_attempt: int | None = None
    """Its attempt (`GITHUB_RUN_ATTEMPT`): a re-run of a failed check is attempt 2 and up."""
    earlier_attempts: int = 0
    """Earlier attempts of the same run and commits whose head samples are pooled into
    `head` (a re-run adds evidence; it does not start afresh)."""
