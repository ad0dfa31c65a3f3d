"""`push` (and `workflow_dispatch`, `schedule`): run every suite of the branch and write
the report, a baseline artifact for later comparisons; no comment."""

from __future__ import annotations

from turncheck.compare.policy import fail_reasons
from turncheck.formats.discovery import FileKind, discover
from turncheck.github.bundle import ReportBundle
from turncheck.github.job import Job, write_bundle
from turncheck.github.publish import (
    collect_annotations,
    log,
    outputs,
    print_annotations,
    write_runner_files,
)
from turncheck.github.verdict import comment_context, compare_bundle, write_html_report
from turncheck.github.workflow import escape_data
from turncheck.render.comment import render_summary
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.runner import Commits


def branch_flow(job: Job) -> int:
    found = discover([str(job.workdir)], job.inputs.globs)
    suites = [f.path.relative_to(job.workdir).as_posix() for f in found.files
              if f.kind is FileKind.SUITE]
    samples = [f.path.relative_to(job.workdir).as_posix() for f in found.files
               if f.kind is FileKind.SAMPLES]
    changes = SuiteChanges(head_suites=suites, samples=samples)
    head = job.runner(Commits(base=None, head=job.context.sha or None), changes).run_head()
    bundle = ReportBundle(repository=job.context.repository, event=job.context.event_name,
                          head_sha=job.context.sha or "unknown",
                          working_directory=job.inputs.working_directory.as_posix(), head=head)
    write_bundle(job, bundle)
    comparison = compare_bundle(job, bundle)
    reasons = fail_reasons(comparison, job.inputs.fail_on,
                           calibration=job.calibration_thresholds())
    context = comment_context(job, bundle, reasons, html=write_html_report(job, bundle,
                                                                           comparison))
    print_annotations(collect_annotations(comparison, bundle.working_directory, head))
    write_runner_files(job.context.output_path, job.context.summary_path,
                       outputs(comparison, job.inputs.report_path, ""),
                       render_summary(comparison, context))
    for reason in reasons:
        log(f"::error title=turncheck::{escape_data(reason)}")
    return 1 if reasons else 0
