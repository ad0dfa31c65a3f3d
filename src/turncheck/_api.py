"""What `turncheck/__init__.py` offers beyond re-exports: running suites and rendering
the pull-request comment in one call each, as the command line and the action do."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from turncheck.choices import Mode
from turncheck.compare.policy import DEFAULT_FAIL_ON, parse_fail_on
from turncheck.compare.verdict import Judgement, judged
from turncheck.engine.loop import run_coroutine
from turncheck.engine.runner import run_suite_files
from turncheck.formats.discovery import discover
from turncheck.formats.validation import validate_files
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.comparison import Comparison
from turncheck.report.run import Report
from turncheck.sides.options import RunOptions

DEFAULT_FAIL_ON_TEXT = ",".join(condition.value for condition in DEFAULT_FAIL_ON)


def run_suites(paths: Iterable[str | Path], *, mode: Mode = "replay", concurrency: int = 8,
               provider: str | None = None, base_url: str | None = None,
               variables: Mapping[str, str] | None = None,
               env: Mapping[str, str] | None = None) -> Report:
    """Run the suites and grade the sample files found under `paths` (files or folders,
    found as `turncheck run` finds them) and return the run report. Files that are not
    valid are left out and listed in the report's `diagnostics`. `mode` is `replay`
    (from the recordings next to each suite, no network), `record` or `live`. `env` is
    what suites and providers read (API keys, `env(...)`, `secret(...)`); default: the
    process's environment, as on the command line."""
    found = discover([str(path) for path in paths])
    missing = found.missing + found.special + found.unsupported
    if missing:
        raise ValueError(f"not a suite, sample file or folder: {', '.join(missing)}")
    validation = validate_files(found.files)
    options = RunOptions(mode=mode, concurrency=concurrency, provider=provider,
                         base_url=base_url, variables=dict(variables or {}),
                         env=dict(os.environ if env is None else env))
    settings = options.settings()
    return run_coroutine(run_suite_files(validation.suites, settings, validation.diagnostics,
                                   samples=validation.samples))


def render_comment(comparison: Comparison, *, head: Report, base: Report | None = None,
                   fail_on: str = DEFAULT_FAIL_ON_TEXT) -> str:
    """The pull-request comment (GitHub Markdown) the action would post for `comparison`
    of `head` with `base`, its verdict failing by the `fail_on` conditions (as
    `--fail-on`)."""
    verdict = judged(comparison, Judgement(set(parse_fail_on(fail_on))))
    return comment_markdown(comparison, CommentContext(fail_reasons=verdict.reasons,
                                                          head=head, base=base))
