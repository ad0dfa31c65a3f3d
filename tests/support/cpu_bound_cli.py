"""`python -m turncheck` with a check that is CPU-bound in Python (a test hook).

Every `match`/`not_match` against an answer holding "spin" computes for up to two
minutes without awaiting, as a check over a huge answer would: the event loop is
blocked for the whole check. tests/integration/test_interruption.py signals such a run.
"""

from __future__ import annotations

import sys
import time

import turncheck.engine.checks as checks
from turncheck.cli.main import main
from turncheck.engine.globs import glob_match

SPIN_SECONDS = 120.0


def spinning_glob_match(pattern: str, response: str) -> bool:
    if "spin" in response:
        print("spinning", file=sys.stderr, flush=True)
        deadline = time.monotonic() + SPIN_SECONDS
        while time.monotonic() < deadline:
            pass
    return glob_match(pattern, response)


checks.glob_match = spinning_glob_match  # type: ignore[attr-defined]  # the name checks uses

if __name__ == "__main__":
    raise SystemExit(main())
