"""The `[grader]` table of a sample file: the judge being calibrated (docs/samples.md).

    [grader]
    model = "gpt-4o-mini"                 # required
    criteria = "Warm, brief, on topic."   # either criteria: turncheck's -3..+3 prompt
    # prompt = "..."                      # or a whole prompt: a sandboxed Jinja template
    provider = "openai"                   # optional, as in suites
    base_url = "http://127.0.0.1:8765/v1" # optional, as in suites
    temperature = 0                       # optional, default 0
    seed = 1                              # optional
    max_output_tokens = 256               # optional, default 256
    min_agreement = 80                    # optional: percent; calibration fails below it

A `prompt` template receives `messages` (a list of `{role, content}`), `conversation`
(the transcript as the criteria prompt shows it) and `sample` (`{id, tags}`); the
label, its reason and the description are withheld so the grader cannot read the
answer. Names other than those are reported here, statically, at the `prompt` key.
"""

from __future__ import annotations

from typing import Annotated, Literal

import jinja2
from jinja2 import meta
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from turncheck.choices import PROVIDER_NAMES, ProviderName
from turncheck.text.environment import sandboxed_environment
from turncheck.text.template_limits import COMPILE_LIMIT_ERRORS, TOO_DEEP, limit_problems

GraderKind = Literal["criteria", "prompt"]
TomlPath = tuple[str | int, ...]
Problem = tuple[TomlPath, str, str]
"""(path in the file, diagnostic code, message)."""

TEMPLATE_VARIABLES = ("messages", "conversation", "sample")
DEFAULT_GRADER_TEMPERATURE = 0.0

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Number = StrictFloat | StrictInt


class GraderTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: NonEmptyStr
    criteria: NonEmptyStr | None = None
    prompt: NonEmptyStr | None = None
    provider: ProviderName | None = None
    base_url: Annotated[StrictStr, Field(pattern=r"^https?://\S+$")] | None = None
    temperature: Annotated[Number, Field(ge=0, le=2)] = DEFAULT_GRADER_TEMPERATURE
    seed: StrictInt | None = None
    max_output_tokens: Annotated[StrictInt, Field(ge=1, le=100_000)] | None = None
    min_agreement: Annotated[Number, Field(ge=0, le=100)] | None = None
    pass_threshold: Annotated[StrictInt, Field(ge=-3, le=3)] | None = None
    """A score (or label) at least this counts as a pass: reports TPR/TNR and the
    confusion matrix of the grader's pass/fail against the labels'."""


class Grader(GraderTable):
    line: int = Field(ge=1, description="1-based line of the [grader] table")

    @property
    def kind(self) -> GraderKind:
        return "criteria" if self.criteria is not None else "prompt"

    @property
    def instructions(self) -> str:
        """The criteria, or the prompt template."""
        return self.criteria if self.criteria is not None else self.prompt or ""


GRADER_KEYS = tuple(GraderTable.model_fields)
VALUE_SHAPES = {
    "model": "a non-empty string (the model id)",
    "criteria": "a non-empty string",
    "prompt": "a non-empty string (a Jinja template)",
    "provider": "one of " + ", ".join(f'"{name}"' for name in PROVIDER_NAMES),
    "base_url": "an http:// or https:// URL",
    "temperature": "a number from 0 to 2",
    "seed": "an integer",
    "max_output_tokens": "an integer from 1 to 100000",
    "min_agreement": "a percentage from 0 to 100",
    "pass_threshold": "an integer from -3 to 3",
}


def instruction_problems(table: GraderTable) -> list[Problem]:
    """Exactly one of `criteria` and `prompt`; a prompt must be a usable template."""
    if table.criteria is None and table.prompt is None:
        message = '[grader] needs "criteria" (scored with turncheck\'s -3..+3 prompt) or "prompt"'
        return [(("grader",), "invalid-grader", message)]
    if table.criteria is not None and table.prompt is not None:
        message = '[grader] takes "criteria" or "prompt", not both'
        return [(("grader", "prompt"), "invalid-grader", message)]
    if table.prompt is not None:
        problems = template_problems(table.prompt)
        return [(("grader", "prompt"), "grader-template", problem) for problem in problems]
    return []


def template_problems(source: str) -> list[str]:
    """What makes a grader prompt template unusable, found without rendering it."""
    env = sandboxed_environment()
    try:
        parsed = env.parse(source)
        env.compile(parsed)  # unknown filters and tests fail here, not in parse
    except jinja2.TemplateSyntaxError as exc:
        return [f"grader prompt: template error at template line {exc.lineno}: {exc.message}"]
    except COMPILE_LIMIT_ERRORS:
        return [f"grader prompt: template error: {TOO_DEEP}"]
    provided = set(TEMPLATE_VARIABLES) | set(env.globals)
    unknown = sorted(meta.find_undeclared_variables(parsed) - provided)
    return [
        f"grader prompt: unknown variable {name!r} (available: {', '.join(TEMPLATE_VARIABLES)})"
        for name in unknown
    ] + [f"grader prompt: template line {line}: {message}"
         for line, message in limit_problems(parsed)]
