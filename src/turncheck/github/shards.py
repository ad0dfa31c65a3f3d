"""The report job of a sharded run (`merge-reports`): the shards' bundles merged into
one, the base fetched or re-run once for all shards when they left it out, and posted."""

from __future__ import annotations

from turncheck.engine.merge import MergeError, merge_reports
from turncheck.github.baseline import resolve_mode
from turncheck.github.job import (
    ActionError,
    Job,
    read_bundle,
    trusted_baseline,
    with_token_counts,
    write_bundle,
)
from turncheck.github.publish import publish
from turncheck.github.trust import VERIFIED, Provenance
from turncheck.github.workflow import log
from turncheck.report.bundle import BaselineInfo, ReportBundle
from turncheck.report.run import Report
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.two_commit_runner import Commits


def merged_flow(job: Job, provenance: Provenance = VERIFIED) -> int:
    """The report job of a sharded run: merge the shards' reports, then post once."""
    pattern = job.inputs.merge_reports or ""
    paths = sorted(p for p in job.context.workspace.glob(pattern) if p.is_file())
    if not paths:
        raise ActionError(f"merge-reports: no report matches {pattern!r}")
    bundles = [(path.name, read_bundle(path, job.context.workspace)) for path in paths]
    first_name, first = bundles[0]
    for name, bundle in bundles[1:]:
        if (bundle.pull_number, bundle.head_sha, bundle.base_sha) != (
                first.pull_number, first.head_sha, first.base_sha):
            raise ActionError(f"{name} is from another pull request or commit than {first_name}")
    try:
        head = merge_reports([(name, b.head) for name, b in bundles])
        bases = [(name, b.base) for name, b in bundles if b.base is not None]
        base = merge_reports(bases) if bases else None
    except MergeError as exc:
        raise ActionError(f"cannot merge the shard reports: {exc}") from None
    baseline = BaselineInfo(source="rerun") if base is not None else None
    if base is None and first.base_suites and first.base_sha:
        base, baseline = baseline_for(job, first, head)
    merged = with_token_counts(first.model_copy(update={"head": head, "base": base,
                                                        "baseline": baseline}))
    write_bundle(job, merged)
    return publish(job, merged, nothing_changed=not head.suites and not first.base_suites
                   and not head.calibrations, provenance=provenance)


def baseline_for(job: Job, first: ReportBundle, head: Report
                 ) -> tuple[Report | None, BaselineInfo | None]:
    """The base side the shards left out: from a main-branch artifact when asked, else
    re-run at the base commit, priced as the head was."""
    assert first.base_sha is not None
    if resolve_mode(job.inputs.baseline, job.inputs.mode) == "artifact":
        found, info = trusted_baseline(job, first.base_sha, set(first.base_suites))
        log(info.describe())
        if found is not None:
            return found, info
        log("re-running the base commit instead")
    else:
        info = BaselineInfo(source="rerun")
    changes = SuiteChanges(base_suites=list(first.base_suites))
    options = job.options().priced_at(head.price_source.timestamp)
    runner = job.runner(Commits(base=first.base_sha, head=first.head_sha), changes, options)
    report = runner.run_base()
    return report, None if report is None else info
