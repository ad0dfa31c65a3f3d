"""Suite regexes run on hostile answers in linear time (issue 23: no small input hangs a run).

A protocol suite's `extract` and `self_assessment.pattern` come from a pull request and
are matched against model answers. With Python's `re`, `(a+)+$` against forty `a`s and
a `b` backtracks for hours and no signal can stop it; turncheck matches with RE2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer, last_user_text
from turncheck.formats.suite_loader import load_suite
from turncheck.text.user_regex import UserRegexError, compile_user_regex, first_match

ROOT = Path(__file__).resolve().parents[2]
CATASTROPHIC = "(a+)+$"


def hostile_suite(tmp_path: Path, server: ScriptedServer) -> Path:
    path = tmp_path / "hostile.eval.yaml"
    path.write_text(f"""\
metadata: {{name: hostile, model: gpt-4o-mini, provider: openai, base_url: '{server.base_url}'}}
cases:
  - id: catastrophic
    vars: {{tag: CASE-A}}
  - id: matching
    vars: {{tag: CASE-B}}
turns:
  - id: ask
    prompt: "[{{{{ case.vars.tag }}}}] Say a lot of a."
    extract: {{run: '{CATASTROPHIC}'}}
    scorers:
      - id: said
        match: "*a*"
  - id: echo
    prompt: "You said <{{{{ turns.ask.extracted.run }}}}>."
    scorers:
      - id: fine
        match: "*fine*"
""", encoding="utf-8")
    return path


def test_a_catastrophic_extract_pattern_finishes_and_keeps_every_case(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("a" * 40 + "b", contains="[CASE-A] Say")
    scripted_server.add_rule("a" * 40, contains="[CASE-B] Say")
    scripted_server.add_rule("fine")
    suite = hostile_suite(tmp_path, scripted_server)
    report_path = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    # Python's re would backtrack 2**40 times on case A: far past this timeout.
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "record", str(suite), "--json", str(report_path)],
        cwd=ROOT, env={**env, "OPENAI_API_KEY": "sk-test-0000"}, text=True,
        capture_output=True, timeout=30, check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    cases = {c["id"]: c["status"] for c in report["protocols"][0]["cases"]}
    assert cases == {"catastrophic": "pass", "matching": "pass"}, done.stdout + done.stderr
    echoed = [text for r in scripted_server.requests
              if "You said" in (text := last_user_text(r.json))]
    assert sorted(echoed) == sorted(["You said <None>.", f"You said <{'a' * 40}>."])


@pytest.mark.parametrize(("pattern", "reason"), [
    ("(?=score)\\d+", "lookahead (?=...) is not supported"),
    ("(?<=score )\\d+", "lookbehind (?<=...) is not supported"),
    ("(\\d)\\1", "backreferences (\\1 …) are not supported"),
    ("\\d+\\Z", "\\Z (use \\z or $) is not supported"),
])
def test_a_pattern_re2_cannot_run_is_refused_at_load_with_the_reason(
    tmp_path: Path, pattern: str, reason: str
) -> None:
    path = tmp_path / "refused.eval.yaml"
    path.write_text(f"""\
metadata: {{name: refused, model: gpt-4o-mini}}
cases:
  - id: one
turns:
  - id: ask
    prompt: "Estimate your score."
    scorers:
      - id: estimate
        self_assessment: {{actual: 0.5, pattern: '{pattern}'}}
""", encoding="utf-8")
    loaded = load_suite(path)
    messages = [d.message for d in loaded.diagnostics if d.code == "invalid-regex"]
    assert len(messages) == 1 and reason in messages[0], loaded.diagnostics


def test_matching_is_case_insensitive_and_reads_the_first_group() -> None:
    assert first_match(r"score:\s*(\d+)%", "My SCORE: 62% overall") == "62"
    assert first_match(r"\d+%", "about 62% or 70%") == "62%"
    assert first_match(r"(x)?y", "y") is None
    with pytest.raises(UserRegexError, match="invalid repetition size"):
        compile_user_regex("a{1001}")


def test_a_discovery_glob_with_many_stars_does_not_hang_on_a_long_path() -> None:
    """Globs in the configuration and file names both come from pull requests; with
    Python's re, nine stars against a 60-character name backtracked for minutes."""
    code = ("from turncheck.formats.discovery import glob_matches\n"
            "print(glob_matches('*a*a*a*a*a*a*a*a*b', 'evals/' + 'a' * 200),"
            " glob_matches('**/*a*a*.eval.yaml', 'x/' + 'a' * 200 + '.eval.yaml'))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, check=True)
    assert done.stdout.split() == ["False", "True"]
