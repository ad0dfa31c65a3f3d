"""Keep secret values out of results: every string is scrubbed before it is reported."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)
MIN_SECRET_LENGTH = 4
"""Shorter values would blank out ordinary words; such secrets are not worth much anyway."""


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        values = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        self._secrets = sorted(values, key=len, reverse=True)
        # Secrets that read the same inside JSON text (API keys do): a model whose JSON
        # contains none of them has nothing to redact, so it needs no rebuilt copy.
        self._json_safe = all(json.dumps(s, ensure_ascii=False)[1:-1] == s for s in values)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, "[REDACTED]")
        return value

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self._walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        return value

    def model(self, model: Model) -> Model:
        if not self._secrets or (self._json_safe and not self._appears_in(model)):
            return model
        return type(model).model_validate(self._walk(model.model_dump()))

    def _appears_in(self, model: BaseModel) -> bool:
        text = model.model_dump_json()
        return any(secret in text for secret in self._secrets)
