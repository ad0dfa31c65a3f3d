"""Completion-token counts for `min_tokens` / `max_tokens`.

The provider's reported completion tokens are used. When a provider reports
none, turncheck estimates ceil(characters / 4), the usual rule of thumb for
English with BPE tokenizers, and flags the result as estimated.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def completion_tokens(reported: int | None, text: str) -> tuple[int, bool]:
    """The count to check and whether it was estimated."""
    if reported is not None:
        return reported, False
    return estimate_tokens(text), True


# Input tokens of a request, before it is sent (budgets and `turncheck estimate`).
#
# With tiktoken installed and its BPE file already on disk (TIKTOKEN_CACHE_DIR set),
# OpenAI model families are counted exactly with their own encoding. turncheck never
# lets tiktoken download anything at run time. Every other model gets a documented
# bound, flagged as estimated: one token per UTF-8 byte, which no byte-level BPE
# tokenizer (GPT, Llama 3, Qwen, Gemma's byte fallback) can exceed. Both add the
# chat template's overhead below, generous on purpose.

MESSAGE_OVERHEAD_TOKENS = 10
"""Tokens a chat template may add per message (role markers, separators)."""
REQUEST_OVERHEAD_TOKENS = 10
"""Tokens a chat template may add per request (reply priming)."""
TOKENIZER_ENV = "TURNCHECK_TOKENIZER"
"""`estimate` turns the exact tokenizer off (tests set it; never fetches either way)."""

Encoder = Callable[[str], int]
_encoders: dict[str, Encoder | None] = {}


def exact_encoder(model: str) -> Encoder | None:
    """The model's own token counter, or None when no offline tokenizer knows it."""
    bare = model.rsplit("/", 1)[-1].split(":")[-1]
    if bare not in _encoders:
        _encoders[bare] = _load_tiktoken(bare)
    return _encoders[bare]


def _load_tiktoken(model: str) -> Encoder | None:
    if os.environ.get(TOKENIZER_ENV) == "estimate" or not os.environ.get("TIKTOKEN_CACHE_DIR"):
        return None  # without a cache directory tiktoken would download its BPE file
    try:
        import tiktoken  # optional: pip install 'turncheck[tokens]'
    except ImportError:
        return None
    try:
        encoding = tiktoken.encoding_for_model(model)
    except Exception:  # unknown model, or its BPE file is not in the cache
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def counted_exactly(model: str) -> bool:
    return exact_encoder(model) is not None


def input_token_bound(model: str, texts: Sequence[str], *, chat: bool = True) -> int:
    """At least as many input tokens as sending `texts` (chat messages or embedding
    inputs) to `model` can use: exact with the model's tokenizer, else UTF-8 bytes."""
    encoder = exact_encoder(model)
    count = encoder or (lambda text: len(text.encode("utf-8")))
    overhead = MESSAGE_OVERHEAD_TOKENS * len(texts) + REQUEST_OVERHEAD_TOKENS if chat else 0
    return sum(count(text) for text in texts) + overhead


def input_token_guess(model: str, texts: Sequence[str]) -> int:
    """A likely input-token count (exact where possible, else characters / 4)."""
    encoder = exact_encoder(model)
    count = encoder or estimate_tokens
    return sum(count(text) for text in texts) + 4 * len(texts) + 3
