"""`mode: estimate` on a pull request: run nothing, post what a live run of the changed
suites would cost (docs/budgets.md)."""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.engine.estimate import estimate
from turncheck.engine.pricing import Pricer
from turncheck.formats.discovery import FileKind
from turncheck.formats.validation import validate_files
from turncheck.github.job import Job, trusted_baseline
from turncheck.github.publish import (
    Published,
    explain_read_only,
    post_comment,
    write_runner_files,
)
from turncheck.github.workflow import log
from turncheck.render.comment import MARKER
from turncheck.render.estimate_view import estimate_markdown
from turncheck.sides.two_commit_runner import price_instant


def estimate_flow(job: Job, number: int, suites: list[str], head_sha: str, base_sha: str,
                  samples: Sequence[str] = ()) -> int:
    """Expected figures come from the main-branch baseline artifact when there is one."""
    files = job.checkout.found(suites, FileKind.SUITE) + job.checkout.found(
        list(samples), FileKind.SAMPLES)
    validation = validate_files(files, job.inputs.max_depth, root=job.workdir)
    history, info = trusted_baseline(job, base_sha, {*suites, *samples})
    if history is None:
        log(f"{info.describe()}; the expected figures are guessed")
    pricer = Pricer.at(price_instant(job.root, head_sha))
    result = estimate(validation.suites, pricer, history,
                      history_name=None if history is None else "the baseline artifact",
                      sample_files=validation.samples)
    body = estimate_markdown(result, MARKER)
    published = Published()
    post_comment(job.api(), number, body, MARKER, job.inputs.comment, published)
    explain_read_only(published, job.inputs.report_path)
    write_runner_files(job.context.output_path, job.context.summary_path, {}, body)
    return 0
