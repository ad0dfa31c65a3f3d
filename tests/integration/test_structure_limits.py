"""JSON and TOML structure limits (issue 21 item 1, issue 23 defects 8 and 9).

A sample file, config or referenced data file that nests too deeply or holds too
many values is a diagnostic at its `line:col`, decided by turncheck before the
parser runs: the same on every Python and parser version, in bounded memory (a
60 KB file of one 30,000-part dotted key made tomllib hold 3.5 GB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from turncheck.config import ConfigError, parse_config
from turncheck.formats.nesting import json_structure_problem, toml_structure_problem
from turncheck.formats.references import ReferenceProblem, parse_data
from turncheck.formats.sample_loader import parse_samples

MAXRSS = Path(__file__).parents[1] / "support" / "maxrss.py"
DOTTED = "[samples]\na" + ".a" * 30_000 + " = 1\n"
HOSTILE_TOML = {
    "dotted key": (DOTTED, 2, 126, "TOML nested more than 64 levels deep"),
    "table header": ("[" + ".".join(["t"] * 70) + "]\nx = 1\n", 1, 129,
                     "TOML nested more than 64 levels deep"),
    "inline arrays": ("x = " + "[" * 2_000 + "]" * 2_000 + "\n", 1, 68,
                      "TOML nested more than 64 levels deep"),
    "huge array": ("x = [" + ",".join(["1"] * 250_000) + "]\n", 1, 400_003,
                   "TOML has more than 200,000 values"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TOML))
def test_hostile_sample_files_are_a_diagnostic_at_their_position(name: str) -> None:
    text, line, column, message = HOSTILE_TOML[name]
    [diagnostic] = parse_samples(text, "hostile.samples.toml").diagnostics
    assert (diagnostic.code, diagnostic.message) == ("toml-structure", message)
    assert (diagnostic.line, diagnostic.column) == (line, column)


def test_ordinary_toml_passes_the_structure_scan_untouched() -> None:
    text = ('[grader]\nname = "a.b.c [x] {y}"\n# a.b.c.d [[[\nscore = 1.5\n'
            'list = [1.5, 2.5, [3]]\ninline = {a = 1, b = {c = 2.5}}\n'
            '[[samples]]\nx.y.z = """\n[[[[ a.b.c.d.e\n"""\n' + "pad.x = 1\n" * 70)
    assert toml_structure_problem(text) is None


def test_project_config_and_referenced_data_files_use_the_same_limits() -> None:
    with pytest.raises(ConfigError) as config:
        parse_config("[tool.turncheck]\n" + DOTTED, "pyproject.toml", pyproject=True)
    [problem] = config.value.diagnostics
    assert (problem.code, problem.message) == ("toml-structure",
                                               "TOML nested more than 64 levels deep")
    with pytest.raises(ReferenceProblem, match=r"vars.toml:2:126: TOML nested more than 64"):
        parse_data(DOTTED, "vars.toml", toml=True)
    with pytest.raises(ReferenceProblem,
                       match=r"messages.json:1:69: JSON nested more than 64 levels deep"):
        parse_data('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", "messages.json")
    assert parse_data('{"a": "[[[[{{{{", "b": [1, [2]]}', "ok.json") == {
        "a": "[[[[{{{{", "b": [1, [2]]}


def test_json_scan_ignores_brackets_inside_strings_and_escapes() -> None:
    assert json_structure_problem('["\\"[[[[" ' + ", 1" * 10 + "]", max_nesting=2) is None
    assert json_structure_problem("[" * 3, max_nesting=2) is not None


def test_thirty_thousand_dotted_keys_are_refused_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "hostile.samples.toml").write_text(DOTTED * 1)
    peak_file = tmp_path / "peak.txt"
    done = subprocess.run(
        [sys.executable, str(MAXRSS), str(peak_file), sys.executable, "-m", "turncheck",
         "validate", "."], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "hostile.samples.toml:2:126" in output and "Traceback" not in output
    assert int(peak_file.read_text()) < 300 * 1024, "peak memory above 300 MiB"
