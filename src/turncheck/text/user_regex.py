"""Regular expressions written by suite authors, matched with RE2 in linear time.

A protocol suite's `extract` patterns and `self_assessment.pattern` come from a pull
request and run against model answers, which are hostile too. Python's `re`
backtracks: `(a+)+$` against forty `a`s and a `b` runs for hours, and the interpreter
checks for signals only between bytecodes, so not even SIGTERM stops it. RE2 matches
in time linear in the answer for every pattern, so nothing needs a timeout (a timeout
would make a case's result depend on the machine, and base and head could then
differ for no reason). The price is RE2's dialect: no lookarounds, no backreferences,
no `\\Z` (use `\\z` or `$`), and `\\d`, `\\w`, `\\s`, `\\b` are ASCII-only. A pattern
that uses them is refused when the suite is loaded, with the reason.

Linear is not small: when a pattern's DFA outgrows its memory, RE2 falls back to an
engine whose work is the pattern's program size times the text's length (a hundred
large patterns took minutes on a 1 MB answer). So a pattern's program is at most
`MAX_PROGRAM_SIZE` instructions (refused when loaded), and the patterns run against one
answer may do at most `MAX_REGEX_WORK` instructions × characters (`check_work`); past
it the extraction is an error saying so, decided before anything runs, so it never
depends on the machine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

_OFF_THREAD_WORK = 4_000_000
"""A search whose work (program size × characters) may exceed this runs in a worker
thread (RE2 releases the GIL), so the main thread stays free to act on a signal within
the interpreter's next bytecodes. One C call on the main thread cannot be interrupted:
a pattern near `MAX_PROGRAM_SIZE` took 2.2 s on 65,536 characters, which a bound on the
text's length alone let run there; this much work takes some 40 ms at worst."""
_WAIT_SECONDS = 0.05

# A DFA for the pattern may use this much memory; past it RE2 falls back to its NFA,
# which is slower but still linear, so no answer can exhaust memory through a pattern.
_MAX_MEMORY = 8 << 20

_UNSUPPORTED = (
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?P=", "named backreference (?P=name)"),
    ("(?#", "comment group (?#...)"),
    ("\\Z", "\\Z (use \\z or $)"),
)


MAX_PROGRAM_SIZE = 4_000
"""RE2 instructions of one compiled pattern (a few hundred characters of alternatives)."""
MAX_REGEX_WORK = 500_000_000
"""Instructions × characters of all patterns run against one answer: two seconds or so at
worst (every pattern on RE2's slowest engine), far more than ordinary patterns need
(ten patterns of 100 instructions on a 100 KB answer use 100,000,000)."""


class UserRegexError(ValueError):
    """A pattern RE2 cannot use; the message says why, for a diagnostic."""


class RegexWorkError(ValueError):
    """The patterns would do more work on one answer than `MAX_REGEX_WORK`."""


@dataclass(frozen=True)
class UserRegex:
    pattern: str
    groups: int
    _compiled: Any

    @property
    def program_size(self) -> int:
        return int(self._compiled.programsize)

    def first(self, text: str) -> str | None:
        """The first match's group (its whole text without a group); None without one."""
        match = _interruptible(self._compiled.search, text, self.program_size)
        if match is None:
            return None
        found: str | None = match.group(1) if self.groups else match.group(0)
        return found

    def fullmatch(self, text: str) -> bool:
        """Whether the pattern matches the whole of `text`."""
        return _interruptible(self._compiled.fullmatch, text, self.program_size) is not None


def _interruptible(search: Callable[[str], Any], text: str, program_size: int) -> Any:
    """`search(text)`; when it may be long, in a daemon thread, waited for in short
    steps so a signal handler (or the interruption watchdog) can end the wait. An
    abandoned search finishes on its own, or dies with the process."""
    if program_size * len(text) <= _OFF_THREAD_WORK:
        return search(text)
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(search(text))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append(exc)

    worker = threading.Thread(target=work, name="turncheck-regex", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(_WAIT_SECONDS)
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _options(ignore_case: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.case_sensitive = not ignore_case
    options.max_mem = _MAX_MEMORY
    return options


def _reason(pattern: str, message: str) -> str:
    for syntax, name in _UNSUPPORTED:
        if syntax in pattern:
            return (f"{name} is not supported: answers are matched with RE2, which runs in "
                    "linear time and has no lookarounds or backreferences")
    if "invalid escape sequence: \\" in message and message[-1:].isdigit():
        return ("backreferences (\\1 …) are not supported: answers are matched with RE2, "
                "which runs in linear time")
    return message


@lru_cache(maxsize=512)
def compile_user_regex(pattern: str, ignore_case: bool = True) -> UserRegex:
    """`pattern` compiled for RE2 (case-insensitive by default); UserRegexError if refused."""
    try:
        compiled = re2.compile(pattern, _options(ignore_case))
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise UserRegexError(_reason(pattern, message)) from None
    size = int(compiled.programsize)
    if size > MAX_PROGRAM_SIZE:
        raise UserRegexError(f"the pattern compiles to {size:,} RE2 instructions; at most "
                             f"{MAX_PROGRAM_SIZE:,} (its work on an answer grows with both)")
    return UserRegex(pattern, int(compiled.groups), compiled)


def check_work(patterns: list[str], text: str) -> None:
    """RegexWorkError when running `patterns` over `text` could exceed `MAX_REGEX_WORK`."""
    size = sum(compile_user_regex(p).program_size for p in patterns)
    if size * len(text) > MAX_REGEX_WORK:
        raise RegexWorkError(
            f"{len(patterns):,} pattern(s) of {size:,} RE2 instructions in all against an "
            f"answer of {len(text):,} characters exceed the bound per answer "
            f"({MAX_REGEX_WORK:,} instructions × characters); use fewer or smaller "
            "patterns")


def first_match(pattern: str, text: str) -> str | None:
    """The first match of a (validated) suite pattern in `text`, ignoring case."""
    return compile_user_regex(pattern).first(text)
