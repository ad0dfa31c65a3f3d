"""The one "did you mean" of every message about a misspelt name: keys of suites, sample
files and the configuration, tool and turn names, command-line options."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable


def quoted(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def did_you_mean(word: str, known: Iterable[str], otherwise: str = "",
                 show: Callable[[str], str] = quoted) -> str:
    """`; did you mean "model"?` for the known name closest to `word`; else `otherwise`
    (e.g. `; allowed: a, b`), which is empty by default."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {show(close[0])}?" if close else otherwise
