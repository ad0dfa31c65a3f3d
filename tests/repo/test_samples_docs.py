"""Issue 33, item 14: what the docs quote of `turncheck calibrate` is what it prints on
the shipped examples, and the live model's build time is given once, consistently."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_examples import missing_from, quoted_output

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIME = "about 30 minutes on a loaded 2-core machine"


def test_the_calibrate_output_quoted_in_the_docs_is_what_it_prints() -> None:
    [block] = quoted_output(ROOT / "docs" / "samples.md")
    assert block[0] == "$ turncheck calibrate examples/ --quiet"
    done = subprocess.run([sys.executable, "-m", "turncheck", "calibrate", "examples/",
                           "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert missing_from(block[1:], done.stdout.splitlines()) == []


def test_the_live_model_build_time_is_the_same_wherever_it_is_given() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts = {p.relative_to(ROOT).as_posix(): " ".join(p.read_text("utf-8").split())
             for p in pages}
    given = {page for page, text in texts.items() if BUILD_TIME in text}
    assert given == {"README.md", "docs/examples.md"}
    other = re.compile(r"~?\d+ minutes (to build|on a)|build\w* llama-cpp-python[^.]*\d+ min")
    assert {page: other.findall(text.replace(BUILD_TIME, "")) for page, text in texts.items()
            if other.search(text.replace(BUILD_TIME, ""))} == {}
