"""Issue 44, item 8: `turncheck run` on a sample file without a `[grader]` prints no
empty eval table and no "Total 0" under a file of 6 samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from turncheck.cli.main import main

ROOT = Path(__file__).parents[2]


def test_a_sample_file_without_a_grader_prints_no_empty_tables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "examples/support/tone.samples.toml").read_text()
    ungraded = text[:text.index("[grader]")] + text[text.index("[samples."):]
    (tmp_path / "tone.samples.toml").write_text(ungraded)
    assert main(["run", str(tmp_path)]) in (0, None)
    lines = capsys.readouterr().out.splitlines()
    assert not any(line.startswith(("Suite ", "Total")) for line in lines), lines
    row = next(line for line in lines if line.startswith(str(tmp_path / "tone.samples.toml")))
    assert row.split()[1:3] == ["6", "not"]
