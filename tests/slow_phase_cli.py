"""`python -m turncheck` with a loading or rendering phase that says when it starts (a
test hook for tests/test_interruption_phases.py).

Each suite file prints `loading NAME` on stderr before it is loaded. With
`TURNCHECK_TEST_SLOW_RENDER` set, the HTML report prints `rendering` and then computes
in Python for up to two minutes, as rendering a huge report would.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import turncheck.formats.validation as validation
import turncheck.render.html_report as html_report
from turncheck.cli.main import main

SPIN_SECONDS = 120.0
_load_suite = validation.load_suite
_render_report = html_report.render_report


def announced_load_suite(path: Path, *args: Any, **kwargs: Any) -> Any:
    print(f"loading {path.name}", file=sys.stderr, flush=True)
    return _load_suite(path, *args, **kwargs)


def slow_render_report(**kwargs: Any) -> str:
    print("rendering", file=sys.stderr, flush=True)
    deadline = time.monotonic() + SPIN_SECONDS
    while time.monotonic() < deadline:
        pass
    return _render_report(**kwargs)


validation.load_suite = announced_load_suite  # type: ignore[assignment]  # the name it uses
if os.environ.get("TURNCHECK_TEST_SLOW_RENDER"):
    html_report.render_report = slow_render_report

if __name__ == "__main__":
    raise SystemExit(main())
