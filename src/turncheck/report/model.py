"""The one base of the report and comparison models."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Self, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

MAX_VALUE_DEPTH = 64
"""Levels of nesting a free-form value (a tool call's arguments, a tool definition) keeps
in a report. The report's own structure adds about 15 levels above it (bundle, report,
suite, eval, sample, turn, call), so every document stays well inside the 200 levels
pydantic's JSON parser, which every turncheck reader uses, accepts."""
MAX_DEEP_TEXT_CHARS = 2_000
"""Characters of JSON text kept of a value nested deeper than `MAX_VALUE_DEPTH`."""

PROMPT_TABLE: ContextVar[dict[str, str] | None] = ContextVar("turncheck_prompts", default=None)
"""While a report is written as JSON: its long prompts (and its apps' system prompts),
written once under `prompts`, keyed by SHA-256 (`report/results.py`)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with lone surrogates (legal in JSON escapes and Python strings, not in
    UTF-8) replaced by U+FFFD; `text` itself when it has none."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def too_deep_text(value: object) -> str:
    """What a report keeps of a value nested deeper than `MAX_VALUE_DEPTH`: the start of
    its JSON text, marked."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError):
        text = ""
    return (well_formed(text[:MAX_DEEP_TEXT_CHARS]) + f"\n... [kept as text by turncheck: "
            f"nested more than {MAX_VALUE_DEPTH} levels deep]")


def _cleaned_models(model: BaseModel) -> BaseModel:
    """A model that is not a `ReportModel` (a diagnostic), its strings made well-formed."""
    if isinstance(model, ReportModel):
        return model  # cleaned when it was built
    update = _cleaned_fields(model)
    return model.model_copy(update=update) if update else model


def _cleaned(value: Any, depth: int = 0) -> Any:
    """`value` with every string well-formed and nesting cut at `MAX_VALUE_DEPTH`; the
    same object when nothing had to change."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, BaseModel):
        return _cleaned_models(value)
    if not isinstance(value, list | dict) or not value:
        return value
    if depth >= MAX_VALUE_DEPTH:
        return too_deep_text(value)
    if isinstance(value, list):
        items = [_cleaned(item, depth + 1) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    pairs = [(_cleaned(key), _cleaned(item, depth + 1)) for key, item in value.items()]
    unchanged = all(new_key is key and new is old for (new_key, new), (key, old)
                    in zip(pairs, value.items(), strict=True))
    return value if unchanged else dict(pairs)


def _leaves(annotation: Any) -> set[Any]:
    """The types a field's annotation is built from (`list[dict[str, Any]] | None` → dict,
    str, Any, NoneType); the generic origins themselves count too."""
    args = get_args(annotation)
    if not args:
        return {annotation}
    origin = get_origin(annotation)
    found: set[Any] = {origin} if isinstance(origin, type) else set()
    for arg in args:
        found |= _leaves(arg)
    return found


@functools.cache
def _fields_to_clean(model: type[BaseModel]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(fields that hold strings, fields that hold free-form values) of `model`: the
    others (numbers, enums, report models) never need cleaning."""
    texts, values = [], []
    for name, field in model.model_fields.items():
        leaves = _leaves(field.annotation)
        if Any in leaves or dict in leaves or any(
                isinstance(leaf, type) and issubclass(leaf, BaseModel)
                and not issubclass(leaf, ReportModel) for leaf in leaves):
            values.append(name)
        elif str in leaves:
            texts.append(name)
    return tuple(texts), tuple(values)


def _cleaned_fields(model: BaseModel, json_input: bool = False) -> dict[str, Any]:
    """The fields of `model` whose values `_cleaned` changed, with their new values. JSON
    that pydantic parsed holds no lone surrogate (its parser refuses one), so only the
    nesting of free-form values is checked then."""
    texts, values = _fields_to_clean(type(model))
    changed = {}
    for name in values if json_input else (*texts, *values):
        value = model.__dict__.get(name)
        if isinstance(value, str) and value.isascii():
            continue
        fixed = _cleaned(value)
        if fixed is not value:
            changed[name] = fixed
    return changed


_SHARED_FIELD_SETS: dict[frozenset[str], set[str]] = {}
"""One set of explicitly set field names per combination, shared by every model that has
it: pydantic keeps one per instance (about 2 KiB for a turn's 19 names), a sixth of a
replayed 5,000-eval run's memory. `ReportModel.__setattr__` copies it before adding."""


def _share_fields_set(model: BaseModel) -> None:
    names = model.__pydantic_fields_set__
    shared = _SHARED_FIELD_SETS.setdefault(frozenset(names), names)
    if shared is not names:
        object.__setattr__(model, "__pydantic_fields_set__", shared)


class ReportModel(BaseModel):
    """A part of a run report or comparison; unknown fields are rejected.

    Every string a report holds passes through here, wherever it came from (a model's
    answer or tool call, a provider's error text, a suite file, an exception): it is made
    well-formed (a lone surrogate would make the report unwritable as UTF-8) and a
    free-form value is cut at `MAX_VALUE_DEPTH` levels, when the model is built, copied
    with changes or assigned to."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_validator(mode="after")
    def _well_formed_strings(self, info: ValidationInfo) -> Self:
        for name, value in _cleaned_fields(self, info.mode == "json").items():
            object.__setattr__(self, name, value)
        _share_fields_set(self)
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Self:
        cleaned = None if update is None else {
            name: _cleaned(value) for name, value in update.items()}
        return super().model_copy(update=cleaned, deep=deep)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__pydantic_fields_set__:  # shared: pydantic adds the name
            object.__setattr__(self, "__pydantic_fields_set__",
                               set(self.__pydantic_fields_set__))
        super().__setattr__(name, _cleaned(value))
