"""Keep secret values out of results: every string is scrubbed before it is reported.

Each secret is removed in every form `providers.secret_forms` lists (reversed, base64,
hex, URL-encoded, fragments …), not only as typed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from turncheck.providers.secret_forms import FormRedactor

Model = TypeVar("Model", bound=BaseModel)
MIN_SECRET_LENGTH = 4
"""Shorter values would blank out ordinary words; such secrets are not worth much anyway."""


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self._forms = FormRedactor(secrets, "[REDACTED]", MIN_SECRET_LENGTH)
        # How each form reads inside the model's JSON text: a model whose JSON holds
        # none of them has nothing to redact, so it needs no rebuilt copy.
        self._json_forms = {json.dumps(f, ensure_ascii=False)[1:-1] for f in self._forms.forms}

    def text(self, value: str) -> str:
        return self._forms.text(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self._walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        return value

    def model(self, model: Model) -> Model:
        if not self._forms or not self._appears_in(model):
            return model
        return type(model).model_validate(self._walk(model.model_dump()))

    def _appears_in(self, model: BaseModel) -> bool:
        text = model.model_dump_json()
        return any(form in text for form in self._json_forms) or self._forms.found_in_json(text)
