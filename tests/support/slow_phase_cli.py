"""`python -m turncheck` with a loading or rendering phase that says when it starts (a
test hook for tests/integration/test_interruption_phases.py).

Each suite file prints `loading NAME` on stderr before it is loaded. With
`TURNCHECK_TEST_SLOW_RENDER` set, the HTML report and the action's step summary print
`rendering` and then compute in Python for up to two minutes, as rendering a huge
report would; with `TURNCHECK_TEST_SIGNAL_FILE` set as well, the process sends itself
SIGTERM as rendering starts and writes the time it did to that file.

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
from turncheck.cli.main import main

SPIN_SECONDS = 120.0
_load_suite = validation.load_suite
_render_report = html_report.render_report
_render_summary = comment.render_summary


def announced_load_suite(path: Path, *args: Any, **kwargs: Any) -> Any:
    print(f"loading {path.name}", file=sys.stderr, flush=True)
    return _load_suite(path, *args, **kwargs)


def spin() -> None:
    print("rendering", file=sys.stderr, flush=True)
    signal_file = os.environ.get("TURNCHECK_TEST_SIGNAL_FILE")
    if signal_file:
        Path(signal_file).write_text(repr(time.time()), encoding="utf-8")
        os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + SPIN_SECONDS
    while time.monotonic() < deadline:
        pass


def slow_render_report(**kwargs: Any) -> str:
    spin()
    return _render_report(**kwargs)


def slow_render_summary(*args: Any, **kwargs: Any) -> str:
    spin()
    return _render_summary(*args, **kwargs)


validation.load_suite = announced_load_suite  # type: ignore[assignment]  # the name it uses
if os.environ.get("TURNCHECK_TEST_SLOW_RENDER"):
    html_report.render_report = slow_render_report
    comment.render_summary = slow_render_summary

if __name__ == "__main__":
    if len(sys.argv) > 1 and Path(sys.argv[1]).name == "turncheck":
        del sys.argv[1]  # the console script the action harness runs
    raise SystemExit(main())
