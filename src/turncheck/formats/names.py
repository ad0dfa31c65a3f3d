"""Fuzzy matching of population (gate) names, e.g. "CD3+ T cells" == "T cells (CD3+)".

A name is normalised to a key:

1. lowercase; `−` → `-`; markdown emphasis, quotes and backticks dropped; `/` and
   parentheses become spaces; a hyphen between two words becomes a space;
2. marker signs are canonicalised: `CD3 positive`, `CD3pos`, `CD3(+)` → `cd3+`;
   `negative`/`neg` → `-`; `high`/`bright` → `hi`, `low` → `lo`, `dim` stays;
   glued markers are split (`CD4-CD8-` → `cd4- cd8-`);
3. other punctuation is dropped; filler words (`cells`, `cell`, `gate`, `gates`,
   `population(s)`, `subset(s)`, `the`, `a`, `an`, `of`) are dropped (unless
   nothing else is left); a plural `s` is dropped from words longer than 3
   letters (`singlets` → `singlet`);
4. the tokens are sorted.

Two names match when their keys' `difflib.SequenceMatcher` ratio is at least the
threshold (default `DEFAULT_THRESHOLD`), with one rule for markers (tokens with
a digit, like `cd45ra`, or a trailing `+`/`-`): when both names carry markers,
their marker sets must be equal and the ratio is taken over the other words.
When only one carries markers, the other words are compared ("T cells" matches
"CD3+ T cells"). So "CD16+ NK cells" and "CD56+ NK cells" never match.

Matching a predicted list against an expected one is one-to-one: pairs are
taken greedily by decreasing ratio (ties in document order).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

DEFAULT_THRESHOLD = 0.85
FILLER = frozenset(
    {"cells", "cell", "gate", "gates", "population", "populations", "subset", "subsets",
     "the", "a", "an", "of"}
)
_SIGN_WORDS = {
    "+": "+", "-": "-", "pos": "+", "positive": "+", "neg": "-", "negative": "-",
    "hi": "hi", "high": "hi", "bright": "hi", "lo": "lo", "low": "lo", "dim": "dim",
}
_EMPHASIS = re.compile(r"[*_`\"“”‘’]")
_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z]{2})")
_GLUED_SIGN = re.compile(r"(?<=[+-])(?=[a-z0-9])")
_GLUED_WORD_SIGN = re.compile(r"(?<=\d)(pos|positive|neg|negative|high|bright|low)\b")
_PUNCTUATION = re.compile(r"[^\w\s+-]")
_MARKER = re.compile(r"^(?=.*\d)[a-z][a-z0-9]*(?:[+-]+|hi|lo|dim)?$|^[a-z][a-z0-9]*[+-]+$")


@dataclass(frozen=True)
class NameKey:
    key: str
    markers: frozenset[str]
    words: str


def _tokens(name: str) -> list[str]:
    text = name.lower().replace("−", "-").replace("–", "-")
    text = _EMPHASIS.sub("", text)
    text = text.replace("(+)", "+").replace("(-)", "-")
    text = re.sub(r"[/()\[\],;:]", " ", text)
    text = _WORD_HYPHEN.sub(" ", text)
    text = _GLUED_WORD_SIGN.sub(lambda m: " " + m.group(1), text)
    text = _GLUED_SIGN.sub(" ", text)
    text = _PUNCTUATION.sub(" ", text)
    tokens: list[str] = []
    for token in text.split():
        sign = _SIGN_WORDS.get(token)
        if sign is not None and tokens and _MARKER.match(tokens[-1]) and tokens[-1][-1] not in "+-":
            tokens[-1] += sign
            continue
        if token in ("+", "-"):
            continue
        tokens.append(token)
    return tokens


def _singular(token: str) -> str:
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss") and token.isalpha():
        return token[:-1]
    return token


@lru_cache(maxsize=4096)
def name_key(name: str) -> NameKey:
    tokens = _tokens(name)
    kept = [t for t in tokens if t not in FILLER] or tokens
    kept = [_singular(t) for t in kept]
    markers = frozenset(t for t in kept if _MARKER.match(t))
    words = " ".join(sorted(t for t in kept if t not in markers))
    return NameKey(" ".join(sorted(set(kept))), markers, words)


def normalise(name: str) -> str:
    """The comparison key of `name` (see the module docstring)."""
    return name_key(name).key


def _ratio(a: str, b: str) -> float:
    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def similarity(a: str, b: str) -> float:
    """0..1; names match when this is at least the threshold."""
    ka, kb = name_key(a), name_key(b)
    if ka.key == kb.key:
        return 1.0
    if ka.markers and kb.markers:
        if ka.markers != kb.markers:
            return 0.0
        return 1.0 if ka.words == kb.words else _ratio(ka.words, kb.words)
    if ka.markers or kb.markers:
        if not ka.words or not kb.words:
            return 0.0
        return _ratio(ka.words, kb.words)
    return _ratio(ka.key, kb.key)


def canonical(name: str, aliases: Mapping[str, str]) -> str:
    """`aliases[name]` when `name` matches an alias exactly after normalisation."""
    key = normalise(name)
    for alias, target in aliases.items():
        if normalise(alias) == key:
            return target
    return name


def same(a: str, b: str, threshold: float = DEFAULT_THRESHOLD) -> bool:
    return similarity(a, b) >= threshold


@dataclass(frozen=True)
class Match:
    predicted: str
    expected: str
    similarity: float


def match_names(
    predicted: Sequence[str],
    expected: Sequence[str],
    threshold: float = DEFAULT_THRESHOLD,
    aliases: Mapping[str, str] | None = None,
) -> list[Match]:
    """One-to-one matches of `predicted` to `expected` names, best pairs first."""
    aliases = aliases or {}
    left = [canonical(p, aliases) for p in predicted]
    right = [canonical(e, aliases) for e in expected]
    candidates = [
        (score, i, j)
        for i, p in enumerate(left)
        for j, e in enumerate(right)
        if (score := similarity(p, e)) >= threshold
    ]
    candidates.sort(key=lambda item: (-item[0], item[1], item[2]))
    used_p: set[int] = set()
    used_e: set[int] = set()
    matches: list[tuple[int, Match]] = []
    for score, i, j in candidates:
        if i in used_p or j in used_e:
            continue
        used_p.add(i)
        used_e.add(j)
        matches.append((i, Match(predicted[i], expected[j], round(score, 4))))
    return [match for _, match in sorted(matches, key=lambda item: item[0])]


def unique_names(names: Iterable[str]) -> list[str]:
    """`names` without repeats (same normalised key), first spelling kept."""
    seen: set[str] = set()
    kept: list[str] = []
    for name in names:
        key = normalise(name)
        if key and key not in seen:
            seen.add(key)
            kept.append(name)
    return kept
