"""Glob memory is bounded by the answer and the pattern, not their product (issue 32,
item 5): a 100 KB `?` segment against a 3.8 MB answer took 1.9 GB, 300 KB raised
MemoryError."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from turncheck.engine.checks import TurnContext, evaluate_check
from turncheck.engine.globs import GlobError, compile_glob, glob_match
from turncheck.formats.suite import MatchCheck

ROOT = Path(__file__).resolve().parents[2]
ANSWER_CHARS = 4 * 1024 * 1024

PROBE = """
import sys
from turncheck.engine.globs import GlobError, glob_match
# 4 M characters of answer with 70,000 distinct ones: one mask per character used to be kept.
block = "".join(chr(0x4E00 + i % 20_000) + chr(0x10000 + i) for i in range(50_000))
answer = block * ({chars} // len(block))
pattern = eval(sys.argv[1])  # an expression: a 300 KB argument is over the OS limit
try:
    print(glob_match(pattern, answer))
except GlobError as exc:
    print("refused:", exc)
"""


def peak_kib(tmp_path: Path, pattern: str) -> tuple[int, str]:
    out = tmp_path / "maxrss"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "maxrss.py"), str(out),
         sys.executable, "-c",
         PROBE.format(chars=ANSWER_CHARS), pattern],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    return int(out.read_text()), done.stdout.strip()


@pytest.mark.parametrize(("pattern", "expected"), [
    ("'*' + '?' * 300_000 + '*'", "True"),  # the 300 KB `?` segment
    ("'?' * 300_000 + '*' + '?' * 300_000", "True"),  # at both ends
    ("'*' + '?' * 1000 + '\u4e00' + '?' * 1000 + '*'", "True"),  # a span within the bound
    ("'*' + '?' * 1000 + '\u4e00' + '?' * 10 + '[!x]' + '?' * 2000 + '*'", "True"),
    ("'*\u4e00' + '?' * 4094 + 'x*'", "False"),  # the widest span, scanning the whole answer
])
def test_a_300_kb_question_mark_pattern_against_a_4_mb_answer_stays_small(
    tmp_path: Path, pattern: str, expected: str
) -> None:
    peak, printed = peak_kib(tmp_path, pattern)
    assert printed == expected
    assert peak < 200 * 1024, f"{peak / 1024:.0f} MiB"  # the answer itself is ~16 MiB


def test_a_wildcard_span_over_the_bound_is_refused_clearly(tmp_path: Path) -> None:
    peak, printed = peak_kib(tmp_path, "'*a' + '?' * 300_000 + 'b*'")
    assert printed.startswith("refused:") and "at most 4,096" in printed
    assert peak < 200 * 1024


def test_a_match_check_reports_the_refusal_as_its_error() -> None:
    pattern = "*a" + "?" * 5000 + "b*"
    with pytest.raises(GlobError):
        compile_glob(pattern)
    assert glob_match("*a" + "?" * 5000 + "*", "xa" + "y" * 6000)  # trailing `?`s are free

    async def never(*_: object) -> Any:
        raise AssertionError("no call")

    context = TurnContext(response="a" * 10, reported_output_tokens=None, conversation=[],
                          render=lambda text: text, judge=never, embed=never)
    result = asyncio.run(evaluate_check(MatchCheck(match=pattern), context))
    assert not result.passed and result.error is not None and "at most 4,096" in result.error
    assert len(result.detail) < 300  # the pattern is not copied whole into the report
