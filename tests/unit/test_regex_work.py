"""The regular expressions run against one answer do bounded work (issue 32, item 11),
and a long RE2 search does not make a run deaf to SIGTERM (item 8): RE2's fallback engine
took 218 s for 100 large patterns against one 1 MB answer, and 3.2 s to stop."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest

from turncheck.engine.interruption import STOP, interruptible
from turncheck.engine.protocol import CaseError, _extracted
from turncheck.formats.protocol import Turn
from turncheck.formats.suite_loader import load_suite
from turncheck.text.user_regex import (
    MAX_PROGRAM_SIZE,
    RegexWorkError,
    UserRegexError,
    check_work,
    compile_user_regex,
)

ANSWER = "ab" * 500_000  # 1 MB
LARGE = "(" + "|".join(f"a[ab]{{{i}}}b[ab]{{{i // 2}}}c" for i in range(10, 22)) + ")"


def test_a_pattern_too_large_to_run_is_refused_when_loaded() -> None:
    huge = "(" + "|".join(f"a[ab]{{{i}}}b[ab]{{{i}}}c" for i in range(20, 90)) + ")"
    with pytest.raises(UserRegexError, match=f"at most {MAX_PROGRAM_SIZE:,}"):
        compile_user_regex(huge)


def test_a_hundred_large_patterns_against_a_1_mb_answer_are_an_error_before_any_search() -> None:
    patterns = [LARGE + f"{n}" for n in range(100)]
    started = time.monotonic()
    with pytest.raises(RegexWorkError, match="exceed the bound per answer"):
        check_work(patterns, ANSWER)
    turn = Turn(id="t1", prompt="p", extract={f"x{n}": p for n, p in enumerate(patterns)})
    with pytest.raises(CaseError, match='turn "t1" extract: 100 pattern'):
        _extracted(turn, ANSWER)
    assert time.monotonic() - started < 5  # compiling only; the searches took minutes
    check_work(["answer: (\\d+)"] * 10, "x" * 100_000)  # ordinary patterns are far inside


def test_sigterm_during_a_long_re2_search_is_acted_on_within_a_second() -> None:
    slow = compile_user_regex("(?:[ab]*a[ab]{50}){1,5}c")  # RE2's slow engine: seconds
    rng = random.Random(1)
    text = "".join(rng.choice("ab") for _ in range(2_000_000))

    async def search() -> str:
        return str(slow.first(text))

    async def main() -> str:
        return await STOP.guard(search, lambda: "interrupted")

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    started = time.monotonic()
    try:
        with interruptible():
            timer.start()
            outcome = asyncio.run(main())
    finally:
        timer.cancel()
        STOP.signal = None  # this process goes on running tests
    assert outcome == "interrupted"
    assert time.monotonic() - started < 1.3  # the signal at 0.3 s, then within a second


def test_a_pattern_too_large_is_an_invalid_regex_at_its_line(tmp_path: Path) -> None:
    huge = "(" + "|".join(f"a[ab]{{{i}}}b[ab]{{{i}}}c" for i in range(20, 90)) + ")"
    path = tmp_path / "big.eval.yaml"
    path.write_text(
        "metadata: {name: big, model: gpt-4o-mini}\n"
        "cases:\n  - id: one\n"
        "turns:\n  - id: ask\n    prompt: hi\n"
        f"    extract: {{run: '{huge}'}}\n"
        "    scorers:\n      - id: said\n        match: '*a*'\n", encoding="utf-8")
    loaded = load_suite(path)
    [problem] = [d for d in loaded.diagnostics if d.is_error]
    assert problem.line == 7 and "RE2 instructions; at most 4,000" in problem.message


class _Signalled(Exception):
    pass


def test_a_signal_is_handled_while_a_large_pattern_searches_a_short_answer() -> None:
    """The work, not the answer's length, decides where a search runs (issue 46, item 9):
    a 1,009-instruction pattern over 60,000 characters ran on the main thread in one C
    call, so SIGTERM waited for it (2.2 s to exit at 3,909 instructions)."""
    large = compile_user_regex("[ab]*a[ab]{1000}(c)")
    rng = random.Random(9)
    text = "".join(rng.choice("ab") for _ in range(60_000))
    check_work([large.pattern], text)  # within the bound: the search runs
    searching_when_signalled: list[bool] = []

    def handler(signum: int, frame: object) -> None:
        searching_when_signalled.append(any(
            t.name == "turncheck-regex" and t.is_alive() for t in threading.enumerate()))
        raise _Signalled

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(_Signalled):
            large.first(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert searching_when_signalled == [True]  # handled mid-search, not after it
