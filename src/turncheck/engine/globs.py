"""Glob patterns for `match` / `not_match` (docs/suites.md).

The glob must match the whole response (surrounding whitespace stripped),
case-insensitively; `*` spans newlines, `?` is one character, `[...]` a class
(`[!...]` negates). A pattern without wildcards is whole-response equality.

Both the pattern and the response may come from a pull request, so matching never
backtracks (a regex `.*` per star took hours on `*a*a*a*a*a*a*a*a*b`). The pattern
is split at its stars into fixed-length segments; the first must match at the
start, the last at the end, and each one between is found by a left-most search
after the previous one. Taking the left-most occurrence is always right for a
glob (a star absorbs whatever lies between), so each segment is searched once:
a literal segment with `str.find`, one with `?` or classes with a bit-parallel
(shift-and) scan. A segment's leading and trailing `?`s only shift where it is
searched, so they cost nothing; what remains of a middle segment from its first to
its last `?` or class (its *span*) is at most `MAX_WILDCARD_SPAN` characters, else
the pattern is refused (`GlobError`; a check reports it as its error). The work is
the response's length times span / 64 machine words at most (linear in the response,
a few seconds for a 16 MiB answer at the largest span); the memory is the response,
the pattern and at most `_MASK_CACHE_BYTES` of cached masks.

Case-insensitivity compares characters by their one-character lower case, as
`re.IGNORECASE` does; characters whose lower case is longer (`İ`) compare as
themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

MAX_WILDCARD_SPAN = 4096
"""Characters of a middle segment from its first to its last `?` or `[...]`."""
_MASK_CACHE_BYTES = 16 << 20
"""Memory for the shift-and masks of distinct answer characters (past it they are
recomputed for each occurrence, which is slower but never grows)."""


class GlobError(ValueError):
    """A pattern that cannot be used (a character class with a reversed range, a
    wildcard span too long)."""


@dataclass(frozen=True)
class CharClass:
    """`[...]`: single characters and ranges, case-folded when tested."""

    negated: bool
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]

    def accepts(self, char: str) -> bool:
        variants = {char, _fold_char(char), char.upper() if len(char.upper()) == 1 else char}
        hit = any(self._contains(v) for v in variants)
        return hit != self.negated

    def _contains(self, char: str) -> bool:
        return _fold_char(char) in self.chars or any(lo <= char <= hi for lo, hi in self.ranges)


Atom = str | CharClass | None
"""A folded literal character, a class, or None for `?` (any one character)."""
Segment = tuple[Atom, ...]


def _fold_char(char: str) -> str:
    lower = char.lower()
    return lower if len(lower) == 1 else char


def fold(text: str) -> str:
    """`text` with each character replaced by its one-character lower case (same length)."""
    lower = text.lower()
    if len(lower) == len(text):  # no character grew, so each maps to exactly one
        return lower
    return "".join(_fold_char(c) for c in text)


def _class_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1."""
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    return pattern.find("]", index)


def _char_class(body: str) -> CharClass:
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    index = 0
    while index < len(body):
        low = body[index]
        if index + 2 < len(body) and body[index + 1] == "-":
            high = body[index + 2]
            if high < low:
                raise GlobError(f"bad character range {low}-{high} in [{body}]")
            ranges.append((low, high))
            index += 3
        else:
            chars.add(_fold_char(low))
            index += 1
    return CharClass(negated, frozenset(chars), tuple(ranges))


def _atoms(pattern: str) -> list[Atom | bool]:
    """The pattern's atoms, with True for each star."""
    atoms: list[Atom | bool] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            atoms.append(True)
        elif char == "?":
            atoms.append(None)
        elif char == "[" and (end := _class_end(pattern, index)) != -1:
            atoms.append(_char_class(pattern[index + 1 : end]))
            index = end
        else:
            atoms.append(_fold_char(char))
        index += 1
    return atoms


def _segments(atoms: list[Atom | bool]) -> list[Segment]:
    segments: list[list[Atom]] = [[]]
    for atom in atoms:
        if atom is True:
            segments.append([])
        elif atom is not False:
            segments[-1].append(atom)
    return [tuple(s) for s in segments]


def _literal(segment: Segment) -> str | None:
    """The segment as a string when it holds only literal characters."""
    if all(isinstance(a, str) for a in segment):
        return "".join(a for a in segment if isinstance(a, str))
    return None


def _accepts(atom: Atom, char: str) -> bool:
    if atom is None:
        return True
    if isinstance(atom, str):
        return atom == char
    return atom.accepts(char)


@dataclass(frozen=True)
class Glob:
    """A compiled glob: the segments between its stars."""

    segments: tuple[Segment, ...]
    starred: bool

    def fullmatch(self, folded: str) -> bool:
        """Whether the glob matches all of `folded` (a response already passed to `fold`)."""
        if not self.starred:
            only = self.segments[0]
            return len(folded) == len(only) and _matches_at(only, folded, 0)
        first, last = self.segments[0], self.segments[-1]
        end = len(folded) - len(last)
        if len(first) > end or not _matches_at(first, folded, 0) \
                or not _matches_at(last, folded, end):
            return False
        position = len(first)
        for segment in self.segments[1:-1]:
            found = _find(segment, folded, position, end)
            if found < 0:
                return False
            position = found + len(segment)
        return True


def _matches_at(segment: Segment, text: str, start: int) -> bool:
    literal = _literal(segment)
    if literal is not None:
        return text.startswith(literal, start)
    return all(_accepts(atom, text[start + i]) for i, atom in enumerate(segment))


def _any_ends(segment: Segment) -> tuple[int, int]:
    """How many `?` the segment starts and ends with (an all-`?` segment: all, 0)."""
    lead = 0
    while lead < len(segment) and segment[lead] is None:
        lead += 1
    trail = 0
    while trail < len(segment) - lead and segment[-1 - trail] is None:
        trail += 1
    return lead, trail


def _find(segment: Segment, text: str, start: int, end: int) -> int:
    """Left-most index in [start, end - len(segment)] where `segment` matches, or -1."""
    if start + len(segment) > end:  # also keeps `end - trail` from going negative
        return -1
    lead, trail = _any_ends(segment)
    core = segment[lead:len(segment) - trail]
    if not core:
        return start
    literal = _literal(core)
    if literal is not None:
        found = text.find(literal, start + lead, end - trail)
    else:
        found = _ShiftAnd(core).find(text, start + lead, end - trail)
    return found - lead if found >= 0 else -1


def _check_span(segment: Segment) -> None:
    lead, trail = _any_ends(segment)
    core = segment[lead:len(segment) - trail]
    if _literal(core) is None and len(core) > MAX_WILDCARD_SPAN:
        raise GlobError(f"a part of the glob between two `*` has {len(core):,} characters from "
                        f"its first to its last `?` or `[...]`; at most {MAX_WILDCARD_SPAN:,} "
                        "(literal text around them may be any length)")


class _ShiftAnd:
    """Bit-parallel search for a fixed-length segment with wildcards: one step per character."""

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.any_mask = 0
        self.literal_masks: dict[str, int] = {}
        self.classes: list[tuple[int, CharClass]] = []
        for position, atom in enumerate(segment):
            bit = 1 << position
            if atom is None:
                self.any_mask |= bit
            elif isinstance(atom, str):
                self.literal_masks[atom] = self.literal_masks.get(atom, 0) | bit
            else:
                self.classes.append((bit, atom))
        self.masks: dict[str, int] = {}
        self.max_masks = max(256, _MASK_CACHE_BYTES * 8 // max(1, len(segment)))

    def mask(self, char: str) -> int:
        mask = self.masks.get(char)
        if mask is None:
            mask = self.any_mask | self.literal_masks.get(char, 0)
            for bit, char_class in self.classes:
                if char_class.accepts(char):
                    mask |= bit
            if len(self.masks) < self.max_masks:  # an answer may hold 100,000s of them
                self.masks[char] = mask
        return mask

    def find(self, text: str, start: int, end: int) -> int:
        length = len(self.segment)
        accept = 1 << (length - 1)
        known = self.masks.get
        state = 0
        for offset, char in enumerate(text[start:end]):
            mask = known(char)
            state = ((state << 1) | 1) & (self.mask(char) if mask is None else mask)
            if state & accept:
                return start + offset - length + 1
        return -1


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> Glob:
    """The compiled form of a (stripped) pattern; GlobError when it cannot be used."""
    atoms = _atoms(pattern)
    segments = _segments(atoms)
    middle = [s for s in segments[1:-1] if s]  # `**` is one star
    for segment in middle:
        _check_span(segment)
    kept = [segments[0], *middle, segments[-1]] if len(segments) > 1 else segments
    return Glob(tuple(kept), starred=len(segments) > 1)


def glob_match(pattern: str, response: str) -> bool:
    """Whether `pattern` matches the whole of `response` (both stripped), ignoring case."""
    return compile_glob(pattern.strip()).fullmatch(fold(response.strip()))
