"""vibecheck-style `{{var('name')}}` and `{{secret('name')}}` templates, and secret tokens.

Vars come from configuration. Secrets are bound late: a template renders
`{{secret('NAME')}}` as the token `<SECRET:NAME>` (`secret_token`), and only the
provider layer, just before a request leaves for the network, replaces the token
with the value from the environment. Everything turncheck stores or prints
(results, reports, cassettes, comments) therefore holds the token, never the value.

Only these two forms exist; anything else between `{{` and `}}` is a validation
error, so a typo cannot silently reach the model as literal text. A secret may not
name a variable of the runner or of turncheck itself (`reserved_secret`): those
hold the GitHub token, the action's inputs and the provider API keys.

One rule decides where templates live, for `validate` and `run` alike: the fields
below are rendered before use (and their syntax is checked by `validate`); a
`{{var()}}` or `{{secret()}}` anywhere else is a validation error, because it would
otherwise be sent or reported literally.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from turncheck.text.credentials import RUNNER_CREDENTIAL_PREFIXES, is_credential_env

_EXPRESSION = re.compile(
    r"""\s*(?P<kind>var|secret)\(\s*(?P<q>['"])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P=q)\s*\)\s*"""
)


METADATA_FIELDS = ("model", "judge_model", "embedding_model", "provider", "base_url",
                   "system_prompt")
"""Suite metadata rendered before use (the session renders all but `system_prompt`,
which is rendered into each conversation)."""
MESSAGE_FIELDS = ("content",)
"""Keys of `metadata.messages` (the opening conversation) rendered into each conversation."""
EVAL_FIELDS = ("prompt", "match", "not_match", "expected", "criteria", "persona", "goal",
               "instructions", "opening")
"""Keys inside `evals` rendered before use: prompts and follow-up prompts, `match` and
`not_match` patterns, `semantic.expected` and `llm_judge.criteria`, a simulated user's
`persona`, `goal`, `instructions` and `opening` messages."""

_TEMPLATE_START = re.compile(r"\{\{\s*(?:var|secret)\s*\(")

SECRET_TOKEN = re.compile(r"<SECRET:([A-Za-z_][A-Za-z0-9_.\-]*)>")
"""A secret as templates render it; the provider layer binds it to the value."""


def secret_token(name: str) -> str:
    return f"<SECRET:{name}>"


def reserved_secret(name: str) -> str | None:
    """Why `secret(name)` is refused, or None when the name may be read."""
    upper = name.upper()
    prefix = next((p for p in RUNNER_CREDENTIAL_PREFIXES if upper.startswith(p)), None)
    if prefix is not None:
        return f"secret('{name}') is refused: {prefix}* variables belong to the " \
            "runner and the action (tokens, inputs), not to suites"
    if is_credential_env(upper):
        return f"secret('{name}') is refused: {upper} holds a credential turncheck knows " \
            "(a provider API key or a token), used only by turncheck's own requests"
    return None


@dataclass(frozen=True)
class Placeholder:
    kind: str
    name: str
    start: int
    end: int


class TemplateError(ValueError):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def placeholders(text: str) -> Iterator[Placeholder]:
    """Yield every placeholder in `text`; raise TemplateError on a malformed one."""
    position = 0
    while (start := text.find("{{", position)) != -1:
        end = text.find("}}", start + 2)
        if end == -1:
            raise TemplateError('"{{" is never closed by "}}"', start)
        inner = text[start + 2 : end]
        match = _EXPRESSION.fullmatch(inner)
        if match is None:
            raise TemplateError(
                f"invalid template {{{{{inner}}}}}: expected {{{{var('name')}}}} "
                "or {{secret('NAME')}}",
                start,
            )
        if match["kind"] == "secret" and (reason := reserved_secret(match["name"])):
            raise TemplateError(reason, start)
        yield Placeholder(match["kind"], match["name"], start, end + 2)
        position = end + 2


def check_syntax(text: str) -> TemplateError | None:
    if "{{" not in text:
        return None
    try:
        for _ in placeholders(text):
            pass
    except TemplateError as exc:
        return exc
    return None


def has_template(text: str) -> bool:
    """Whether `text` holds something meant as a `{{var()}}` or `{{secret()}}` template."""
    return "{{" in text and _TEMPLATE_START.search(text) is not None


def not_allowed_message(key: str) -> str:
    return (f'"{key}" takes no {{{{var()}}}} or {{{{secret()}}}} templates (it would be used '
            f"literally); templates are rendered in metadata {', '.join(METADATA_FIELDS)}, "
            f"messages' content and in {', '.join(EVAL_FIELDS)}")


def secret_names(text: str) -> set[str]:
    return {p.name for p in placeholders(text) if p.kind == "secret"}


def render(text: str, variables: Mapping[str, str]) -> str:
    """Substitute vars and secret tokens; a missing var raises KeyError naming it.

    A secret renders as its token whether or not it is set: a replay needs no value,
    and a live request whose secret is unset fails when the token is bound."""
    pieces: list[str] = []
    position = 0
    for placeholder in placeholders(text):
        pieces.append(text[position : placeholder.start])
        if placeholder.kind == "secret":
            pieces.append(secret_token(placeholder.name))
        elif placeholder.name in variables:
            pieces.append(variables[placeholder.name])
        else:
            raise KeyError(f"var {placeholder.name!r} is not set")
        position = placeholder.end
    pieces.append(text[position:])
    return "".join(pieces)
