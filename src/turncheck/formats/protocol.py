"""Protocol suite models: scripted turns, variants, weighted scorers.

A protocol suite is a suite file whose top level holds `metadata`, `cases` and
`turns` (instead of `evals`). Every case runs the same scripted conversation:
each turn's prompt is a sandboxed Jinja template over the case and the earlier
turns, a turn may pick one of several `variants` by `when` expressions, and
each turn is scored by weighted scorers. See `protocol_loader` for the grammar.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from turncheck.formats.names import DEFAULT_THRESHOLD
from turncheck.formats.suite import Check, Metadata, NonEmptyStr, _Node

IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"
Identifier = Annotated[StrictStr, Field(pattern=IDENTIFIER)]
Weight = Annotated[StrictFloat | StrictInt, Field(ge=0)]
Fraction = Annotated[StrictFloat | StrictInt, Field(ge=0, le=1)]

TEMPLATE_NAMES = ("case", "turns", "var", "secret")
"""Names every template and expression may use (plus Jinja's globals)."""
MATCHED = "matched"
"""In a variant's prompt: the value its `when` expression produced."""
CASE_FIELDS = ("id", "vars", "ground_truth")
TURN_FIELDS = (
    "response", "prompt", "variant", "score", "scores", "results", "items", "outline",
    "extracted",
)
"""What `turns.<id>` offers a later turn (see the README, "Protocol suites")."""


class ProtocolMetadata(Metadata):
    pass_threshold: Fraction | None = Field(
        default=None,
        description="A case passes when its interactive reasoning score is at least this.",
    )


class Case(_Node):
    id: NonEmptyStr
    vars: dict[str, Any] = Field(default_factory=dict)
    ground_truth: dict[str, Any] = Field(default_factory=dict)


class Variant(_Node):
    id: Identifier
    when: NonEmptyStr | None = None
    """An expression over earlier results; None marks the default variant."""
    prompt: NonEmptyStr


Expression: TypeAlias = StrictStr
"""A string where data is expected is a Jinja expression, evaluated per case."""


class ListF1Spec(_Node):
    expected: Expression | list[Any] | dict[str, Any]
    threshold: Fraction = DEFAULT_THRESHOLD
    aliases: dict[str, StrictStr] = Field(default_factory=dict)


class OrderSpec(_Node):
    pairs: Expression | list[Annotated[list[StrictStr], Field(min_length=2, max_length=2)]]
    missing: Literal["fail", "skip"] = "fail"
    threshold: Fraction = DEFAULT_THRESHOLD


class JudgeScaleSpec(_Node):
    rubric: NonEmptyStr


class SelfAssessmentSpec(_Node):
    actual: Expression | StrictFloat | StrictInt
    pattern: NonEmptyStr | None = None


ScorerSpec: TypeAlias = Check | ListF1Spec | OrderSpec | JudgeScaleSpec | SelfAssessmentSpec
SCORER_SPECS: dict[str, type[_Node]] = {
    "list_f1": ListF1Spec,
    "order": OrderSpec,
    "judge_scale": JudgeScaleSpec,
    "self_assessment": SelfAssessmentSpec,
}


class Scorer(_Node):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: Identifier
    kind: str
    """`list_f1`, `order`, `judge_scale`, `self_assessment`, or a check type of an eval suite."""
    weight: Weight = 1.0
    spec: Any


class Turn(_Node):
    id: Identifier
    prompt: NonEmptyStr | None = None
    variants: list[Variant] = Field(default_factory=list)
    scorers: list[Scorer] = Field(default_factory=list)
    extract: dict[str, NonEmptyStr] = Field(default_factory=dict)
    """Named regular expressions; the first group (or the whole match) of the first match."""

    @property
    def weight(self) -> float:
        return float(sum(s.weight for s in self.scorers))


class ScorerRef(_Node):
    turn: str
    scorer: str

    def __str__(self) -> str:
        return f"{self.turn}.{self.scorer}"


class SelfCorrection(_Node):
    before: ScorerRef
    after: ScorerRef


class AggregateSpec(_Node):
    final_f1: ScorerRef | None = None
    self_correction: SelfCorrection | None = None
    self_assessment: ScorerRef | None = None


class ProtocolSuite(BaseModel):
    """A protocol suite file: metadata, cases and scripted turns."""

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)

    metadata: ProtocolMetadata
    cases: list[Case]
    turns: list[Turn]
    aggregates: AggregateSpec = Field(default_factory=AggregateSpec)
    secret_names: list[str] = Field(default_factory=list)
    """Every `secret('NAME')` the templates use."""
    cases_file: str | None = None
    """The data file the cases came from, relative to the suite, if any."""

    def turn(self, turn_id: str) -> Turn | None:
        return next((t for t in self.turns if t.id == turn_id), None)

