"""JSON from outside (answers, error bodies, cassette request bodies) with a nesting limit.

`json.loads` recurses once per nesting level and raises `RecursionError`, not
`ValueError`, on input like `[[[[…]]]]`: a few kilobytes from a hostile model server or a
cassette in a pull request would end the run with a traceback. The text is scanned for
its depth before it is parsed (`turncheck.formats.nesting`, the scan every JSON file
turncheck reads goes through), so nothing deeper than `MAX_JSON_DEPTH` is parsed and
the code walking the value afterwards (scrubbing, canonical JSON for cassette keys,
redaction) can recurse safely. `JsonTooDeep` is a `ValueError`, so callers that treat
"not JSON" as a diagnostic keep doing so.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from turncheck.formats.nesting import json_structure_problem

MAX_JSON_DEPTH = 256
"""Chat requests and answers nest about 6 deep; JSON schemas and tool arguments a few
dozen at most."""


class JsonTooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def loads_bounded(data: str | bytes) -> Any:
    """`json.loads(data)`, raising `JsonTooDeep` beyond `MAX_JSON_DEPTH` levels (and a
    `ValueError` for bytes that are not UTF-8)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if json_structure_problem(text, max_nesting=MAX_JSON_DEPTH, max_items=sys.maxsize):
        raise JsonTooDeep
    return json.loads(text)
