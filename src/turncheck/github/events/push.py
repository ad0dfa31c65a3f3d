"""`push` (and `workflow_dispatch`, `schedule`): run every suite of the branch and write
the report, a baseline artifact for later comparisons; no comment."""

from __future__ import annotations

from turncheck.engine.interruption import STOP
from turncheck.formats.discovery import FileKind, discover
from turncheck.github.job import Job, write_bundle
from turncheck.github.publish import publish
from turncheck.report.bundle import ReportBundle
from turncheck.sides.changes import SuiteChanges
from turncheck.sides.two_commit_runner import Commits


def branch_flow(job: Job) -> int:
    found = discover([str(job.workdir)], job.inputs.globs)
    suites = [f.path.relative_to(job.workdir).as_posix() for f in found.files
              if f.kind is FileKind.SUITE]
    samples = [f.path.relative_to(job.workdir).as_posix() for f in found.files
               if f.kind is FileKind.SAMPLES]
    changes = SuiteChanges(head_suites=suites, samples=samples)
    with STOP.keeping():
        head = job.runner(Commits(base=None, head=job.context.sha or None), changes).run_head()
        bundle = ReportBundle(repository=job.context.repository, event=job.context.event_name,
                              head_sha=job.context.sha or "unknown",
                              working_directory=job.inputs.working_directory.as_posix(),
                              head=head)
        write_bundle(job, bundle)
    STOP.checkpoint()
    # No pull request and no merge queue: the verdict goes to the log, the step summary,
    # the outputs and the HTML report only.
    return publish(job, bundle, nothing_changed=False)
