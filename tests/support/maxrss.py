"""Run a command and write its peak resident memory (KiB, children included) to a file.

    python tests/support/maxrss.py OUT_FILE COMMAND [ARGS...]

Used by tests that bound turncheck's memory on hostile input; the command's exit code
is passed through.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    done = subprocess.run(sys.argv[2:], check=False)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    Path(sys.argv[1]).write_text(str(peak), encoding="utf-8")
    raise SystemExit(done.returncode)
