"""`match` / `not_match` globs: the regex semantics they always had, without backtracking."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turncheck.engine.globs import GlobError, glob_match


def _old_class_end(pattern: str, start: int) -> int:
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    return pattern.find("]", index)


def _old_regex(pattern: str) -> re.Pattern[str]:
    """The matcher before issue 23 (a `.*` per star, backtracking): the reference."""
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append(".")
        elif char == "[" and (end := _old_class_end(pattern, index)) != -1:
            body = pattern[index + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\").replace("^", "\\^")
            parts.append(f"[{'^' if negate else ''}{escaped}]")
            index = end
        else:
            parts.append(re.escape(char))
        index += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" on `[[`
        return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def _old_match(pattern: str, response: str) -> bool:
    return _old_regex(pattern.strip()).fullmatch(response.strip()) is not None


PATTERN_CHARS = "aAbBzZ09-_^!\\*?[] \n."
TEXT_CHARS = "aAbBzZ09-_^!\\*?[] \n.é"


@settings(max_examples=1500, deadline=None)
@given(st.text(PATTERN_CHARS, max_size=12), st.text(TEXT_CHARS, max_size=14))
def test_agrees_with_the_old_regex_semantics(pattern: str, response: str) -> None:
    try:
        expected = _old_match(pattern, response)
    except re.error:
        with pytest.raises(GlobError):
            glob_match(pattern, response)
        return
    assert glob_match(pattern, response) == expected


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["*", "?", "a", "b", "[ab]", "[!a]", "ab", "*a"]), max_size=8),
       st.text("abAB\n", max_size=30))
def test_agrees_on_star_heavy_patterns(pieces: list[str], response: str) -> None:
    pattern = "".join(pieces)
    assert glob_match(pattern, response) == _old_match(pattern, response)


@pytest.mark.parametrize(("pattern", "response", "expected"), [
    ("*ok*", "  It is OK.\n", True),
    ("hello", "HELLO", True),
    ("hello", "hello there", False),
    ("*\n*", "two\nlines", True),
    ("a?c", "abc", True),
    ("a?c", "ac", False),
    ("[!a]*", "b...", True),
    ("[!a]*", "a...", False),
    ("[A-C]x", "bX", True),
    ("[]]", "]", True),
    ("[", "[", True),
    ("*a*a*a*a*a*a*a*a*b", "a" * 200 + "b", True),
    ("*a*a*a*a*a*a*a*a*b", "a" * 200, False),
    ("*a?a*", "xaxay", True),
    ("*[0-9][0-9]*", "year 42!", True),
    ("*[0-9][0-9]*", "year 4!", False),
])
def test_glob_examples(pattern: str, response: str, expected: bool) -> None:
    assert glob_match(pattern, response) is expected


def test_a_reversed_class_range_is_a_clear_error() -> None:
    with pytest.raises(GlobError, match="bad character range z-a"):
        glob_match("[z-a]", "b")


def test_the_redos_pattern_against_a_long_answer_returns() -> None:
    # Backtracking took hours here; the linear matcher answers at once (timed in
    # benchmarks/hostile.py, not here).
    answer = "a" * 100_000
    assert glob_match("*a*a*a*a*a*a*a*a*b", answer) is False
    assert glob_match("*a?a*a?a*[ab][ab]?a*b", answer) is False
    assert glob_match("*a*a*a*a*a*a*a*a*b", answer + "b") is True


def test_a_middle_part_needs_room_before_the_last_part() -> None:
    # "*b?*??" needs four characters; "BA" once matched, its "b?" found past the end.
    assert not glob_match("*b?*??", "BA")
    assert glob_match("*b?*??", "xbAAA")
