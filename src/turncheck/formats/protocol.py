"""Protocol suite models: scripted turns, variants, weighted scorers.

A protocol suite is a suite file whose top level holds `metadata`, `cases` and
`turns` (instead of `evals`). Every case runs the same scripted conversation:
each turn's prompt is a sandboxed Jinja template over the case and the earlier
turns, a turn may pick one of several `variants` by `when` expressions, and
each turn is scored by weighted scorers. See `protocol_loader` for the grammar.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from turncheck.formats.names import DEFAULT_THRESHOLD
from turncheck.formats.suite import Metadata, NonEmptyStr, _Node

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


DEFAULT_SCALE = (1, 5)
MAX_SCALE_POINTS = 101
"""A judge scale has at most this many ratings (0..100): the answer schema lists them."""


class JudgeScaleSpec(_Node):
    rubric: NonEmptyStr
    scale: Annotated[list[StrictInt], Field(min_length=2, max_length=2)] = Field(
        default_factory=lambda: list(DEFAULT_SCALE),
        description="[lowest, highest] rating, integers (default [1, 5]); or {min, max}.")

    @field_validator("scale", mode="before")
    @classmethod
    def _min_max(cls, value: Any) -> Any:
        """`{min: 1, max: 10}` reads as `[1, 10]`."""
        if isinstance(value, dict) and set(value) == {"min", "max"}:
            return [value["min"], value["max"]]
        return value

    @model_validator(mode="after")
    def _ordered(self) -> JudgeScaleSpec:
        low, high = self.scale
        if low >= high:
            raise ValueError(f"scale [{low}, {high}]: the lowest rating must be below the "
                             "highest, e.g. [1, 10]")
        if high - low + 1 > MAX_SCALE_POINTS:
            raise ValueError(f"scale [{low}, {high}] has more than {MAX_SCALE_POINTS} ratings")
        return self

    @property
    def lowest(self) -> int:
        return self.scale[0]

    @property
    def highest(self) -> int:
        return self.scale[1]


class SelfAssessmentSpec(_Node):
    actual: Expression | StrictFloat | StrictInt
    pattern: NonEmptyStr | None = None


SCORER_SPECS: dict[str, type[_Node]] = {
    "list_f1": ListF1Spec,
    "order": OrderSpec,
    "judge_scale": JudgeScaleSpec,
    "self_assessment": SelfAssessmentSpec,
}


class Scorer(_Node):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: Identifier
    label: NonEmptyStr | None = None
    """What reports call the scorer (default: its id)."""
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


AGGREGATE_LABELS = {
    "score": "Weighted score",
    "final_f1": "Final F1",
    "self_correction": "Self-correction",
    "meta_cognition": "Meta-cognition (r)",
}
"""The aggregates a suite may name in `aggregates.labels`, with their default labels."""


class AggregateSpec(_Node):
    final_f1: ScorerRef | None = None
    self_correction: SelfCorrection | None = None
    self_assessment: ScorerRef | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    """`aggregates.labels`: the suite's own names for its aggregates (AGGREGATE_LABELS keys)."""


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

    def declared_aggregates(self) -> dict[str, str]:
        """The aggregates this suite reports, by their report name, with its labels: the
        weighted score always; final F1 when it names one or has a `list_f1` scorer;
        self-correction when it names one; meta-cognition when it names a self-assessment
        or has a `self_assessment` scorer."""
        kinds = {s.kind for t in self.turns for s in t.scorers}
        spec = self.aggregates
        declared = {
            "score": True,
            "final_f1": spec.final_f1 is not None or "list_f1" in kinds,
            "self_correction": spec.self_correction is not None,
            "meta_cognition": spec.self_assessment is not None or "self_assessment" in kinds,
        }
        return {REPORT_NAMES.get(name, name): spec.labels.get(name, default)
                for name, default in AGGREGATE_LABELS.items() if declared[name]}


REPORT_NAMES = {"score": "interactive_reasoning"}
"""`aggregates.labels` keys whose report field is named otherwise."""

