"""Completion-token counts for `min_tokens` / `max_tokens`.

The provider's reported completion tokens are used. When a provider reports
none, turncheck estimates ceil(characters / 4), the usual rule of thumb for
English with BPE tokenizers, and flags the result as estimated.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def completion_tokens(reported: int | None, text: str) -> tuple[int, bool]:
    """The count to check and whether it was estimated."""
    if reported is not None:
        return reported, False
    return estimate_tokens(text), True
