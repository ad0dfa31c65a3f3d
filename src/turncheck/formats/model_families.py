"""What a model family does not take, told at validation (issue 24).

OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 …) reject a `temperature` other than 1
("Unsupported value: 'temperature' does not support 0 with this model"), and only they
take `reasoning_effort`. Anthropic's Messages API, as its SDK defines it today, takes
neither `temperature` nor `seed`; its `output_config.effort` takes low, medium or high.
The family is read from the model id alone (`openai/o3`, `anthropic:claude-…`,
`gpt-5-mini`), so a templated or unknown model gets no warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from turncheck.formats.suite import Metadata

_OPENAI_REASONING = re.compile(r"^(o[1-9](-mini|-pro)?|gpt-5(?!-chat)[\w.-]*)([-.:@].*)?$")
_CLAUDE = re.compile(r"^claude")


def bare_model(model: str) -> str:
    """`openai/gpt-5-mini` → `gpt-5-mini`; `anthropic:claude-x` → `claude-x`."""
    name = model.rsplit("/", 1)[-1].lower()
    prefix, colon, rest = name.partition(":")
    return rest if colon and prefix in ("anthropic", "openai", "openrouter") else name


def is_openai_reasoning(model: str) -> bool:
    return _OPENAI_REASONING.match(bare_model(model)) is not None


def family_warnings(metadata: Metadata) -> Iterator[tuple[str, str]]:
    """(field, message) for each setting the suite's model family does not take."""
    model = bare_model(metadata.model)
    if "{{" in metadata.model:
        return
    claude = _CLAUDE.match(model) is not None or metadata.provider == "anthropic"
    reasoning = is_openai_reasoning(model)
    if reasoning and metadata.temperature is not None and metadata.temperature != 1:
        yield "temperature", (f"{model} is an OpenAI reasoning model: it rejects a temperature "
                              "other than 1 (leave temperature unset)")
    if claude:
        yield from _anthropic_warnings(metadata)
    elif metadata.reasoning_effort is not None and not reasoning:
        yield "reasoning_effort", (f"{model} is not an OpenAI reasoning model and may reject "
                                   "reasoning_effort")


def _anthropic_warnings(metadata: Metadata) -> Iterator[tuple[str, str]]:
    if metadata.temperature is not None:
        yield "temperature", "Anthropic's Messages API takes no temperature; it is not sent"
    if metadata.seed is not None:
        yield "seed", "Anthropic's Messages API has no seed; it is not sent"
    if metadata.reasoning_effort in ("none", "minimal"):
        yield "reasoning_effort", (f'Anthropic takes effort low, medium or high, not '
                                   f'"{metadata.reasoning_effort}"; it is not sent')
