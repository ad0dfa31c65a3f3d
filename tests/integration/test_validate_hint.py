"""Issue 33, item 9: `validate DIR` (and `run DIR`) say when vibecheck-style suites in
the directory are not matched by the globs, also when some other file was matched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.integration.test_init import VIBECHECK_SUITE

TURNCHECK = [sys.executable, "-m", "turncheck"]


def turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TURNCHECK, *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)


def mixed_directory(root: Path) -> Path:
    """One suite the default globs match, two vibecheck-style suites they miss."""
    suites = root / "suites"
    suites.mkdir(parents=True)
    (suites / "one.eval.yaml").write_text(VIBECHECK_SUITE.format(name="one"))
    (suites / "math.yaml").write_text(VIBECHECK_SUITE.format(name="math"))
    (suites / "geo.yaml").write_text(VIBECHECK_SUITE.format(name="geo"))
    (suites / "settings.yaml").write_text("retries: 3\nmetadata: {}\n")  # not a suite
    return suites


def test_validate_says_which_suites_the_globs_missed_when_one_file_matched(
    tmp_path: Path,
) -> None:
    mixed_directory(tmp_path)
    done = turncheck(tmp_path, "validate", "suites")
    assert done.returncode == 0
    assert "ok: 1 file checked" in done.stderr
    assert "turncheck: warning: 2 vibecheck-style suites such as suites/geo.yaml are " \
        "not matched: run `turncheck init` or set suite-globs in turncheck.toml" in done.stderr


def test_a_file_excluded_on_purpose_is_not_reported_as_missed(tmp_path: Path) -> None:
    mixed_directory(tmp_path)
    done = turncheck(tmp_path, "validate", "suites", "--exclude-glob", "geo.yaml")
    assert "2 vibecheck-style" not in done.stderr and "1 vibecheck-style suite such as " \
        "suites/math.yaml" in done.stderr, done.stderr
    quiet = turncheck(tmp_path, "validate", "suites", "--exclude-glob", "math.yaml",
                      "--exclude-glob", "geo.yaml")
    assert "vibecheck-style" not in quiet.stderr, quiet.stderr


def test_matched_vibecheck_suites_give_no_hint(tmp_path: Path) -> None:
    mixed_directory(tmp_path)
    done = turncheck(tmp_path, "validate", "suites", "--suite-glob", "*.eval.yaml",
                     "--suite-glob", "math.yaml", "--suite-glob", "geo.yaml")
    assert "ok: 3 files checked" in done.stderr
    assert "vibecheck-style" not in done.stderr
