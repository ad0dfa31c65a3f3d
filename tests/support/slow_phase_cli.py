"""`python -m turncheck` with a loading or rendering phase that says when it starts (a
test hook for tests/integration/test_interruption_phases.py).

Each suite file prints `loading NAME` on stderr before it is loaded. With
`TURNCHECK_TEST_SLOW_RENDER` set, the HTML report and the action's step summary print
`rendering` and then compute in Python for up to two minutes, as rendering a huge
report would; with `TURNCHECK_TEST_SIGNAL_FILE` set as well, the process sends itself
SIGTERM as rendering starts and writes the time it did to that file.
`TURNCHECK_TEST_SIGNAL_AT=regex` (or `=write`) does the same as the first RE2 search
over a long answer starts (or as the JSON report starts being written), without
slowing anything down: the phase runs as it would (benchmarks/sigterm.py).

Also runs as a script with the `turncheck` console script as its first argument (the
action harness's command wrapper).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import turncheck.formats.validation as validation
import turncheck.render.comment as comment
import turncheck.render.html_report as html_report
import turncheck.report.files as report_files
import turncheck.text.user_regex as user_regex
from turncheck.cli.main import main

SPIN_SECONDS = 120.0
LONG_ANSWER_CHARS = 10_000
_load_suite = validation.load_suite
_render_report = html_report.render_report
_render_summary = comment.render_summary


def announced_load_suite(path: Path, *args: Any, **kwargs: Any) -> Any:
    print(f"loading {path.name}", file=sys.stderr, flush=True)
    return _load_suite(path, *args, **kwargs)


def signal_self() -> None:
    """SIGTERM to this process, its time written to the signal file (when one is named)."""
    signal_file = os.environ.get("TURNCHECK_TEST_SIGNAL_FILE")
    if signal_file:
        Path(signal_file).write_text(repr(time.time()), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGTERM)


def spin() -> None:
    print("rendering", file=sys.stderr, flush=True)
    signal_self()
    deadline = time.monotonic() + SPIN_SECONDS
    while time.monotonic() < deadline:
        pass


def slow_render_report(**kwargs: Any) -> str:
    spin()
    return _render_report(**kwargs)


def slow_render_summary(*args: Any, **kwargs: Any) -> str:
    spin()
    return _render_summary(*args, **kwargs)


_interruptible = user_regex._interruptible
_write_report = report_files.write_report


def signalled_search(search: Any, text: str, *args: Any) -> Any:
    if len(text) > LONG_ANSWER_CHARS and not os.environ.get("TURNCHECK_TEST_SIGNALLED"):
        os.environ["TURNCHECK_TEST_SIGNALLED"] = "1"
        print("searching", file=sys.stderr, flush=True)
        signal_self()
    return _interruptible(search, text, *args)


def signalled_write_report(*args: Any, **kwargs: Any) -> None:
    print("writing", file=sys.stderr, flush=True)
    signal_self()
    _write_report(*args, **kwargs)


validation.load_suite = announced_load_suite  # type: ignore[assignment]  # the name it uses
if os.environ.get("TURNCHECK_TEST_SLOW_RENDER"):
    html_report.render_report = slow_render_report
    comment.render_summary = slow_render_summary
if os.environ.get("TURNCHECK_TEST_SIGNAL_AT") == "regex":
    user_regex._interruptible = signalled_search
if os.environ.get("TURNCHECK_TEST_SIGNAL_AT") == "write":
    report_files.write_report = signalled_write_report

if __name__ == "__main__":
    if len(sys.argv) > 1 and Path(sys.argv[1]).name == "turncheck":
        del sys.argv[1]  # the console script the action harness runs
    raise SystemExit(main())
