"""Eval suite models (docs/suites.md).

These pydantic models are both the runtime representation the engine walks and
the source of the published JSON Schema. Positions in the source file are kept
as private attributes so they never leak into the schema or accept user keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from turncheck.choices import ProviderName
from turncheck.formats import templates
from turncheck.formats.budget import BudgetLimits
from turncheck.formats.target import Target
from turncheck.formats.tools import (
    DEFAULT_MAX_TOOL_ROUNDS,
    MaxToolRounds,
    ToolChoice,
    ToolList,
    ToolName,
    ToolResults,
)

MAX_DEPTH = 5
"""Most nested follow-up levels a path may have (so at most 6 turns)."""
MAX_TURNS = 50
"""Most scripted `turns` one eval may list."""
MAX_REPEAT = 100
"""Most samples (independent conversations) one eval may take."""
DEFAULT_MAX_REPEAT = 60
"""`max_repeat` of `repeat: auto` when the suite does not set it and both sides are
sampled together (the joint design stops a steady eval after 5 samples a side and spends
the rest on evals that look worse: docs/statistics.md, "How far `auto` goes")."""
DEFAULT_ALONE_MAX_REPEAT = 30
"""`max_repeat` of `repeat: auto` when the suite does not set it and a side is sampled
alone (against main's stored runs, or a run compared later): that design tops every
mixed first look up to `max_repeat`, so 60 would spend about 70 % of fixed 20 on both
sides' calls on a flaky suite, against 43 % at 30."""

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
TokenCount = Annotated[StrictInt, Field(ge=0)]


class _Node(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, populate_by_name=False, defer_build=True
    )

    # Slots rather than private attributes: positions are set on thousands of
    # nodes per file, and pydantic's private-attribute setup doubled load time.
    __slots__ = ("source_column", "source_line")

    @property
    def line(self) -> int:
        return getattr(self, "source_line", 1)

    @property
    def column(self) -> int:
        return getattr(self, "source_column", 1)

    def at(self, line: int, column: int) -> _Node:
        object.__setattr__(self, "source_line", line)
        object.__setattr__(self, "source_column", column)
        return self


class Message(BaseModel):
    """One message of an opening conversation (OpenAI messages format)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    role: Literal["system", "user", "assistant"]
    content: NonEmptyStr


def _or_template(schema: dict[str, Any]) -> None:
    """In the JSON Schema too, a templated value is checked once rendered."""
    schema.setdefault("anyOf", []).append(
        {"type": "string", "pattern": r"\{\{\s*(var|secret)\s*\(",
         "description": "a {{var('name')}} or {{secret('NAME')}} template"})


TARGET_MODEL_LABEL = "app"
"""`model` of a suite with a target that names none (its label in reports)."""


def _model_or_target(schema: dict[str, Any]) -> None:
    """`model` is required unless the suite has a `target` (the app is the other side)."""
    schema["required"] = [key for key in schema.get("required", []) if key != "model"]
    schema["anyOf"] = [{"required": ["model"]}, {"required": ["target"]}]


DEFAULT_MAX_TURNS = 6
"""Turns (user messages sent, opening ones included) a simulated user takes at most."""
MAX_SIMULATED_TURNS = 20
"""The hard cap on a simulated user's `max_turns`."""


class Simulator(BaseModel):
    """The model that plays a simulated user (docs/suites.md, "Simulated users"); provider,
    base URL and keys are resolved as for the suite's `model`."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    model: NonEmptyStr | None = Field(default=None, description="The simulator's model id.")
    temperature: Annotated[StrictFloat | StrictInt, Field(ge=0, le=2)] | None = Field(
        default=None, description="The simulator's temperature (default 0).")
    seed: StrictInt | None = Field(default=None, description="The simulator's seed.")


class Metadata(BaseModel):
    """Suite metadata. Unknown keys are kept but reported as warnings."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True,
                              json_schema_extra=_model_or_target)

    name: NonEmptyStr = Field(description="Suite name, shown in reports.")
    model: NonEmptyStr = Field(description='Model id; "vendor/model" ids are OpenRouter ids. '
                               "Optional with a target: then the judge's default and a label.")
    target: Target | None = Field(
        default=None, description="The app the conversation is with, instead of a bare model "
        "(docs/targets.md): http, python or command.")
    system_prompt: StrictStr | None = Field(default=None, description="Sent as the system message.")
    threads: Annotated[StrictInt, Field(ge=1, le=256)] | None = Field(
        default=None, description="Most evals of this suite run at once."
    )
    temperature: Annotated[StrictFloat | StrictInt, Field(ge=0, le=2)] | None = None
    max_output_tokens: Annotated[StrictInt, Field(ge=1)] | None = None
    seed: StrictInt | None = None
    provider: ProviderName | None = Field(
        default=None, description="Overrides the provider chosen from the model id.",
        json_schema_extra=_or_template,
    )
    base_url: Annotated[StrictStr, Field(pattern=r"^https?://\S+$")] | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server (implies provider openai).",
        json_schema_extra=_or_template,
    )
    judge_model: NonEmptyStr | None = Field(
        default=None, description="Model for llm_judge checks (default: model)."
    )
    embedding_model: NonEmptyStr | None = Field(
        default=None, description="Model for semantic checks (default: text-embedding-3-small)."
    )
    vars: dict[str, StrictStr] | None = Field(
        default=None,
        description="Values for {{var('name')}} templates, or {file: PATH} of a data file.",
    )
    messages: list[Message] | None = Field(
        default=None,
        description="Opening conversation sent before each eval's prompt (after "
        "system_prompt), or {file: PATH} of a messages file (OpenAI format, JSON or YAML).",
    )
    watch: list[NonEmptyStr] | None = Field(
        default=None,
        description="Globs (relative to the repository root) of files this suite depends on "
        "that no reference names; a pull request changing one runs the suite.",
    )
    budget: BudgetLimits | None = Field(
        default=None,
        description="Hard limits on this suite's live calls (cost in USD, tokens); "
        "calls that could cross them are not sent and their evals end skipped.",
    )
    repeat: Annotated[StrictInt, Field(ge=1, le=MAX_REPEAT)] | Literal["auto"] | None = Field(
        default=None,
        description="Samples (independent conversations) per eval, or `auto` to sample "
        "more only where results vary (see docs/statistics.md). Default 1.",
    )
    max_repeat: Annotated[StrictInt, Field(ge=1, le=MAX_REPEAT)] | None = Field(
        default=None, description=f"Most samples per eval with `repeat: auto` "
        f"(default {DEFAULT_MAX_REPEAT} with base and head sampled together, "
        f"{DEFAULT_ALONE_MAX_REPEAT} for a side sampled alone)."
    )
    min_pass: Annotated[StrictInt, Field(ge=1, le=MAX_REPEAT)] | None = Field(
        default=None, description="Passing samples an eval needs to pass (default: all of them)."
    )
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = Field(
        default=None, description="Sent to OpenAI reasoning models as `reasoning_effort`."
    )
    tools: ToolList | None = Field(
        default=None, description="Function tools offered to the model (OpenAI's format), "
        "or {file: PATH} of a JSON/YAML file holding them."
    )
    tool_choice: ToolChoice | None = Field(
        default=None, description="auto, none, required or {type: function, function: {name}}."
    )
    tool_results: ToolResults | None = Field(
        default=None, description="Scripted results: per tool name, {when, result} entries; "
        "the first whose `when` is a subset of the call's arguments answers."
    )
    max_tool_rounds: MaxToolRounds | None = Field(
        default=None, description="Answers with tool calls one turn may take before its "
        f"final answer (default {DEFAULT_MAX_TOOL_ROUNDS})."
    )
    simulator: Simulator | None = Field(
        default=None, description="The simulated users' model, pinned for the suite "
        "(an eval's `user` may override it): model, temperature, seed.")

    __slots__ = ("field_lines",)

    @model_validator(mode="before")
    @classmethod
    def _label_of_a_target(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data and data.get("target") is not None:
            return {**data, "model": TARGET_MODEL_LABEL}
        return data

    @field_validator("provider", "base_url", mode="wrap")
    @classmethod
    def _templated(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A templated provider or base URL is checked once rendered, at run time."""
        if isinstance(value, str) and templates.has_template(value):
            return value
        return handler(value)

    def remember_lines(self, lines: dict[str, int]) -> None:
        object.__setattr__(self, "field_lines", lines)

    def line_of(self, field: str) -> int | None:
        lines: dict[str, int] = getattr(self, "field_lines", {})
        return lines.get(field)


class _FollowUpFields(_Node):
    """A check's optional attached follow-up: sent when this check fails."""

    prompt: NonEmptyStr | None = Field(default=None, description="Follow-up sent on failure.")
    checks: CheckList | None = Field(default=None, description="Checks for the follow-up turn.")

    @property
    def follow_up(self) -> FollowUp | None:
        if self.prompt is None or self.checks is None:
            return None
        # Its parts are validated already: validating the subtree again cost a few
        # percent of every turn's CPU.
        follow_up = FollowUp.model_construct(prompt=self.prompt, checks=self.checks)
        follow_up.at(self.line, self.column)
        return follow_up


class MatchCheck(_FollowUpFields):
    match: StrictStr = Field(description="Glob the whole response must match.")


class NotMatchCheck(_FollowUpFields):
    not_match: StrictStr = Field(description="Glob the whole response must not match.")


class MinTokensCheck(_FollowUpFields):
    min_tokens: TokenCount


class MaxTokensCheck(_FollowUpFields):
    max_tokens: TokenCount


class SemanticSpec(_Node):
    expected: NonEmptyStr
    threshold: Annotated[StrictFloat | StrictInt, Field(ge=0, le=1)]


class SemanticCheck(_FollowUpFields):
    semantic: SemanticSpec


class JudgeSpec(_Node):
    criteria: NonEmptyStr


class LlmJudgeCheck(_FollowUpFields):
    llm_judge: JudgeSpec


ToolSource = Literal["app", "reply"]
CheckScope = Literal["turn", "conversation"]
_SOURCE = ("Whose tool calls: `app` (the model's, in the app's model calls the proxy saw) "
           "or `reply` (those the app reports); default: the reply's when it reports any, "
           "else the app's model calls.")
_SCOPE = ("`turn` (default): this turn's calls; `conversation`: every call of the "
          "conversation so far.")


class _ToolSourceFields(_FollowUpFields):
    source: ToolSource | None = Field(default=None, description=_SOURCE)


class _TrajectoryFields(_ToolSourceFields):
    scope: CheckScope = Field(default="turn", description=_SCOPE)


class ToolCallCheck(_ToolSourceFields):
    tool_call: ToolName = Field(description="A tool the model must call during this turn.")
    args: dict[str, Any] | None = Field(
        default=None, description="Arguments one call must have (subset; strings are globs)."
    )
    times: Annotated[StrictInt, Field(ge=0)] | None = Field(
        default=None, description="Exact number of matching calls (default: at least one)."
    )


class NoToolCallCheck(_ToolSourceFields):
    no_tool_call: Annotated[StrictStr, Field(pattern=r"^(\*|[A-Za-z0-9_-]{1,64})$")] = Field(
        description='A tool the model must not call during this turn ("*": no tool at all).'
    )


class ToolOrderCheck(_ToolSourceFields):
    tool_order: Annotated[list[ToolName], Field(min_length=1)] = Field(
        description="Tools that must be called in this order (other calls may interleave)."
    )


class ToolSequenceCheck(_TrajectoryFields):
    tool_sequence: Annotated[list[ToolName], Field(min_length=1)] = Field(
        description="Tools the model must call, judged as `order` says.")
    order: Literal["exact", "in_order", "any_order"] = Field(
        default="in_order", description="`exact`: these calls and no others, in this order; "
        "`in_order` (default): in this order, others may come between; `any_order`: each "
        "called, in any order.")


class NeverCalledCheck(_TrajectoryFields):
    never_called: ToolName = Field(description="A tool the model must never call.")


class MaxToolCallsCheck(_TrajectoryFields):
    max_tool_calls: Annotated[StrictInt, Field(ge=0)] = Field(
        description="At most this many tool calls (of `tool`, else of any tool).")
    tool: ToolName | None = Field(default=None, description="The tool counted (default: all).")


class NoLoopCheck(_TrajectoryFields):
    no_loop: Annotated[StrictInt, Field(ge=2)] = Field(
        description="Fails when the same call (tool and arguments) comes this many times "
        "in a row.")


class MaxModelCallsCheck(_FollowUpFields):
    max_model_calls: Annotated[StrictInt, Field(ge=0)] = Field(
        description="An app target: at most this many model calls of the app in this turn.")


class ModelUsedCheck(_FollowUpFields):
    model_used: NonEmptyStr = Field(
        description="An app target: every model call of the app in this turn asked for a "
        "model matching this glob.")


class ContainsSpec(_Node):
    contains: NonEmptyStr


class SystemPromptCheck(_FollowUpFields):
    system_prompt: NonEmptyStr | ContainsSpec = Field(
        description="An app target: a model call of the app in this turn sent a system "
        "prompt matching this glob (or {contains: TEXT}).")


class MaxTurnTokensCheck(_FollowUpFields):
    max_turn_tokens: TokenCount = Field(
        description="An app target: at most this many tokens (input and output) in the "
        "app's model calls of this turn.")


class MaxTurnCostCheck(_FollowUpFields):
    max_turn_cost_usd: Annotated[StrictFloat | StrictInt, Field(ge=0)] = Field(
        description="An app target: at most this cost (USD) of the app's model calls in "
        "this turn.")


Check: TypeAlias = (
    MatchCheck | NotMatchCheck | MinTokensCheck | MaxTokensCheck | SemanticCheck | LlmJudgeCheck
    | ToolCallCheck | NoToolCallCheck | ToolOrderCheck | ToolSequenceCheck | NeverCalledCheck
    | MaxToolCallsCheck | NoLoopCheck | MaxModelCallsCheck | ModelUsedCheck | SystemPromptCheck
    | MaxTurnTokensCheck | MaxTurnCostCheck
)

CHECK_TYPES: dict[str, type[_FollowUpFields]] = {
    "match": MatchCheck,
    "not_match": NotMatchCheck,
    "min_tokens": MinTokensCheck,
    "max_tokens": MaxTokensCheck,
    "semantic": SemanticCheck,
    "llm_judge": LlmJudgeCheck,
    "tool_call": ToolCallCheck,
    "no_tool_call": NoToolCallCheck,
    "tool_order": ToolOrderCheck,
    "tool_sequence": ToolSequenceCheck,
    "never_called": NeverCalledCheck,
    "max_tool_calls": MaxToolCallsCheck,
    "no_loop": NoLoopCheck,
    "max_model_calls": MaxModelCallsCheck,
    "model_used": ModelUsedCheck,
    "system_prompt": SystemPromptCheck,
    "max_turn_tokens": MaxTurnTokensCheck,
    "max_turn_cost_usd": MaxTurnCostCheck,
}
TRAJECTORY_CHECK_TYPES = ("tool_sequence", "never_called", "max_tool_calls", "no_loop")
APP_CHECK_TYPES = ("max_model_calls", "model_used", "system_prompt", "max_turn_tokens",
                   "max_turn_cost_usd")
"""Checks on what an app target sent: only in a suite or eval whose target is an app."""


class FollowUp(_Node):
    """A standalone follow-up: sent when its level fails and no failed check carries one."""

    prompt: NonEmptyStr
    checks: CheckList


class OrGroup(_Node):
    """Passes when at least one member passes; a FollowUp inside is not a member."""

    or_: Annotated[list[Item], Field(min_length=1)] = Field(alias="or")

    @property
    def members(self) -> list[Check | OrGroup]:
        return [item for item in self.or_ if not isinstance(item, FollowUp)]

    @property
    def follow_up(self) -> FollowUp | None:
        return next((item for item in self.or_ if isinstance(item, FollowUp)), None)


def _built_item(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # The loader builds every item before its level: pydantic would return an item as
    # it is too, but only after trying (and failing) each union member listed before
    # its class — up to 19 for a follow-up, a third of building an eval.
    return value if value.__class__ in _ITEM_CLASSES else handler(value)


Item: TypeAlias = Annotated[Check | OrGroup | FollowUp, WrapValidator(_built_item)]
_ITEM_CLASSES = frozenset((*CHECK_TYPES.values(), OrGroup, FollowUp))
CheckList: TypeAlias = Annotated[list[Item], Field(min_length=1)] | OrGroup


class Turn(_Node):
    """One scripted user turn: always sent, in order, with its own checks."""

    prompt: NonEmptyStr = Field(description="The user message of this turn.")
    checks: CheckList = Field(description="Checks of the answer (they may carry follow-ups).")


class SimulatedUser(_Node):
    """A simulated user: a model playing `persona` towards `goal` (or free `instructions`),
    after the scripted `opening` messages."""

    persona: NonEmptyStr | None = Field(default=None, description="Who the user is.")
    goal: NonEmptyStr | None = Field(default=None, description="What the user wants done.")
    instructions: NonEmptyStr | None = Field(
        default=None, description="Free instructions for the simulator (instead of a goal).")
    opening: Annotated[list[NonEmptyStr], Field(min_length=1)] | None = Field(
        default=None, description="User messages sent first, before the simulator takes over.")
    max_turns: Annotated[StrictInt, Field(ge=1, le=MAX_SIMULATED_TURNS)] = Field(
        default=DEFAULT_MAX_TURNS, description="Most user messages sent, opening ones "
        f"included (default {DEFAULT_MAX_TURNS}, at most {MAX_SIMULATED_TURNS}).")
    min_turns: Annotated[StrictInt, Field(ge=1, le=MAX_SIMULATED_TURNS)] | None = Field(
        default=None, description="A stop before this many turns is a simulator error.")
    model: NonEmptyStr | None = Field(
        default=None, description="Overrides metadata.simulator.model.")
    temperature: Annotated[StrictFloat | StrictInt, Field(ge=0, le=2)] | None = Field(
        default=None, description="Overrides metadata.simulator.temperature.")
    seed: StrictInt | None = Field(default=None, description="Overrides metadata.simulator.seed.")

    @model_validator(mode="after")
    def _coherent(self) -> SimulatedUser:
        if self.goal is None and self.instructions is None:
            raise ValueError("a simulated user needs a `goal` or `instructions`")
        if self.min_turns is not None and self.min_turns > self.max_turns:
            raise ValueError(f"min_turns ({self.min_turns}) is above max_turns "
                             f"({self.max_turns})")
        if self.opening is not None and len(self.opening) > self.max_turns:
            raise ValueError(f"{len(self.opening)} opening messages do not fit in "
                             f"max_turns ({self.max_turns})")
        return self


EVAL_FORMS = ("an eval has one of three forms: `prompt` and `checks`, scripted `turns`, "
              "or a simulated `user` (with `success`)")
_FORM_KEYS = {"prompt": ("prompt", "checks"), "turns": ("turns",), "user": ("user", "success")}
_SIMULATED_ONLY = ("success", "each_turn", "review")


def _one_form_schema(schema: dict[str, Any]) -> None:
    """In the JSON Schema too: exactly one of the three forms."""
    schema["required"] = [key for key in schema.get("required", [])
                          if key not in ("prompt", "checks")]
    others = {form: [key for other, keys in _FORM_KEYS.items() if other != form
                     for key in keys] for form in _FORM_KEYS}
    schema["oneOf"] = [{"required": list(keys),
                        "not": {"anyOf": [{"required": [key]} for key in others[form]]}}
                       for form, keys in _FORM_KEYS.items()]


class Eval(_Node):
    model_config = ConfigDict(json_schema_extra=_one_form_schema)

    name: NonEmptyStr | None = Field(default=None, description="Stable id (default: the prompt).")
    prompt: NonEmptyStr | None = Field(default=None, description="The first user message.")
    checks: CheckList | None = Field(default=None, description="Checks of the first answer.")
    turns: Annotated[list[Turn], Field(min_length=1, max_length=MAX_TURNS)] | None = Field(
        default=None, description="Scripted user turns, always sent in order, each with its "
        "own checks (instead of prompt and checks); the eval passes when every turn passes.")
    user: SimulatedUser | None = Field(
        default=None, description="A simulated user talks to the model or app instead of "
        "`prompt` (docs/suites.md, \"Simulated users\").")
    success: CheckList | None = Field(
        default=None, description="With `user`: checks judged on the whole conversation when "
        "it ends (text checks: the last answer; tool checks: every call).")
    each_turn: CheckList | None = Field(
        default=None, description="With `user`: checks every assistant answer must pass.")
    review: StrictBool | None = Field(
        default=None, description="With `user`: a judge flags a conversation where the "
        "simulator broke its persona or goal (an unusable sample).")
    tools: ToolList | None = Field(default=None, description="Overrides metadata.tools.")
    tool_choice: ToolChoice | None = Field(
        default=None, description="Overrides metadata.tool_choice."
    )
    tool_results: ToolResults | None = Field(
        default=None, description="Overrides metadata.tool_results."
    )
    target: Target | None = Field(default=None, description="Overrides metadata.target.")

    __slots__ = ("unique_name",)

    @model_validator(mode="after")
    def _one_form(self) -> Eval:
        if self.user is not None:
            return self._simulated_form()
        extra = next((k for k in _SIMULATED_ONLY if getattr(self, k) is not None), None)
        if extra is not None:
            raise ValueError(f"`{extra}` needs `user` ({EVAL_FORMS})")
        if self.turns is not None and (self.prompt is not None or self.checks is not None):
            raise ValueError('an eval has either "prompt" and "checks" or "turns", not both')
        if self.turns is None and (self.prompt is None or self.checks is None):
            raise ValueError('an eval needs "prompt" and "checks" (or "turns")')
        return self

    def _simulated_form(self) -> Eval:
        if self.prompt is not None or self.checks is not None or self.turns is not None:
            raise ValueError(EVAL_FORMS + ", not two")
        if self.name is None:
            raise ValueError("an eval with `user` needs a `name`")
        if self.success is None:
            raise ValueError("an eval with `user` needs `success` checks")
        return self

    @property
    def steps(self) -> list[Turn]:
        """The eval's scripted user turns: its `turns`, or its prompt and checks as the only
        one (none for a simulated user)."""
        if self.turns is not None:
            return self.turns
        if self.prompt is None or self.checks is None:
            return []
        first = Turn.model_construct(prompt=self.prompt, checks=self.checks)
        first.at(self.line, self.column)
        return [first]

    @property
    def first_prompt(self) -> str:
        """What reports show as the eval's prompt: its (first) prompt, or its simulated
        user's goal (or instructions)."""
        if self.prompt is not None:
            return self.prompt
        if self.turns is not None:
            return self.turns[0].prompt
        user = self.user
        assert user is not None, "an eval has a prompt, turns or a user"
        return user.goal or user.instructions or ""

    @property
    def display_name(self) -> str:
        """The eval's id in reports: its name, or its prompt made unique in the suite."""
        return getattr(self, "unique_name", None) or self.name or self.first_prompt

    def named(self, unique_name: str) -> None:
        object.__setattr__(self, "unique_name", unique_name)


class Suite(BaseModel):
    """A suite file: metadata and evals."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"title": "turncheck eval suite"},
        defer_build=True,
    )

    metadata: Metadata
    evals: Annotated[list[Eval], Field(min_length=1)]


def level_items(checks: CheckList) -> tuple[list[Item], bool]:
    """The items of a level and whether it is an `or` level."""
    if isinstance(checks, OrGroup):
        return list(checks.or_), True
    return list(checks), False


_KIND_OF_MODEL = {model: key for key, model in CHECK_TYPES.items()}


def check_type(check: Check) -> str:
    kind = _KIND_OF_MODEL.get(check.__class__)  # validation asks for every check's kind
    if kind is not None:
        return kind
    return next(key for key, model in CHECK_TYPES.items() if isinstance(check, model))
