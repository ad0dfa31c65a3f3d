"""The parts of a run report that every kind of case shares (evals, protocol cases):
statuses, usage, checks, turns, samples and what repeated samples add up to.

`report/run.py` (the whole report) and `report/protocol.py` (protocol
suites) build on these; both re-export nothing of each other, so neither imports the
other back.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Protocol, Self, TypeVar

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from turncheck.report.app_calls import AppCall
from turncheck.report.model import PROMPT_TABLE as _PROMPT_TABLE
from turncheck.report.model import ReportModel
from turncheck.report.spend import UsageAndCost


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    """Not finished, never a pass or a fail; `EvalResult.reason` says why (`budget`)."""


USABLE = (Status.PASS, Status.FAIL)
"""The statuses of samples that are evidence about the model (errors and skips are not)."""


class StatusReason(StrEnum):
    """Why an eval (or case) has its status when the reason is not its own outcome."""

    INTERRUPTED = "interrupted"
    """The run was stopped (SIGINT/SIGTERM) before the eval finished; status `error`."""
    SIMULATOR = "simulator"
    """A simulated user's conversation the simulator made unusable (an empty or invalid
    message, a stop before `min_turns`, a failed review); status `error`, never a fail."""


class Ending(StrEnum):
    """How a simulated user's conversation ended (docs/suites.md, "Simulated users")."""

    GOAL_MET = "goal_met"
    GAVE_UP = "gave_up"
    MAX_TURNS = "max_turns"
    MIN_TURNS_NOT_REACHED = "min_turns_not_reached"
    TARGET_ERROR = "target_error"
    SIMULATOR_ERROR = "simulator_error"


UNUSABLE_ENDINGS = (Ending.MIN_TURNS_NOT_REACHED, Ending.SIMULATOR_ERROR)
"""Endings the simulator caused: the sample is no evidence about the app."""


class SimulatorSetup(ReportModel):
    """What a simulated user was: the same at base and head, or the comparison of its
    eval is not like-for-like."""

    model: str
    temperature: float | None = None
    seed: int | None = None
    prompt_version: str
    """The simulator prompt's version (turncheck's own wording of it)."""
    persona: str | None = None
    goal: str | None = None
    instructions: str | None = None
    opening: list[str] = Field(default_factory=list)

    def differences(self, other: SimulatorSetup) -> list[str]:
        """The fields (by name) that differ from `other`'s."""
        return [name for name in type(self).model_fields
                if getattr(self, name) != getattr(other, name)]


class ConversationEnd(ReportModel):
    """How one simulated user's conversation ended, and what was judged on it then."""

    ending: Ending
    turns: int
    """User messages sent (opening ones included)."""
    detail: str | None = None
    """The simulator's reason for stopping, or what went wrong."""
    success: list[CheckResult] = Field(default_factory=list)
    """The `success` checks, judged on the whole conversation."""
    review: CheckResult | None = None
    """The `review` judge's verdict on the simulator, when asked."""
    warning: str | None = Field(default=None, exclude_if=lambda given: given is None)
    """Set when the simulator said its goal was met in a conversation whose assistant
    text instructs a grader (docs/trust-model.md, "App text is data")."""

    @property
    def unusable(self) -> bool:
        return self.ending in UNUSABLE_ENDINGS or (
            self.review is not None and not self.review.passed)


class CheckResult(ReportModel):
    type: str
    passed: bool
    detail: str
    depth: int = 0
    """Nesting inside `or` groups, for display."""
    error: str | None = None
    """Set when the check could not be evaluated (judge unparseable, embedding failed)."""
    warning: str | None = Field(default=None, exclude_if=lambda given: given is None)
    """Set when the verdict may not be the judge's own: the conversation's assistant
    text holds instructions to a grader (docs/trust-model.md, "App text is data")."""


def _empty(value: object) -> bool:
    return not value


def _one(value: object) -> bool:
    return value == 1


def _none(value: object) -> bool:
    return value is None


class ToolCallResult(ReportModel):
    """One function call the model made during a turn, and the scripted result it got."""

    round: int
    """Which answer of the turn made the call (1 = the turn's first answer)."""
    name: str
    arguments: Any
    """The call's arguments: a JSON object, or the raw text when it was not valid JSON."""
    result: str | None = None
    """The tool message sent back; None when the call could not be answered."""
    by_app: bool = Field(default=False, exclude_if=lambda ran: not ran)
    """A call an app target reports it ran itself (its result is the app's own)."""
    arguments_chars: int | None = Field(default=None, exclude_if=_none)
    """Set only when `arguments` is an excerpt (`excerpt_answers`): the length of the
    arguments' JSON text."""


MAX_REPORT_PROMPT_CHARS = 20_000
"""Characters of a prompt a report keeps: what a prompt diff compares and the HTML report
shows. A longer prompt (a referenced prompt file of up to 1 MiB) ends with a marker, and
its `prompt_chars` and `prompt_sha256` tell its full length and content apart."""
SHARED_PROMPT_CHARS = 2_000
"""A prompt longer than this is written once per report (`Report.prompts`, keyed by its
`prompt_sha256`); each eval and turn that sent it holds this many characters of it and a
marker. 3,000 evals sharing one prompt file cost the report one copy, not 3,000."""



@functools.lru_cache(maxsize=8)
def kept_prompt(prompt: str) -> tuple[str, int | None, str | None]:
    """(what a report keeps of `prompt`, its length when cut, its SHA-256 when long). One
    result per distinct prompt, so the evals that sent the same prompt share one string."""
    if len(prompt) <= SHARED_PROMPT_CHARS:
        return prompt, None, None
    digest = hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()
    if len(prompt) <= MAX_REPORT_PROMPT_CHARS:
        return prompt, None, digest
    return _cut(prompt, "the prompt", MAX_REPORT_PROMPT_CHARS), len(prompt), digest


def _shared_stub(prompt: str) -> str:
    return (prompt[:SHARED_PROMPT_CHARS] + "\n... [kept once per report by turncheck: the "
            "whole prompt is under `prompts`, keyed by this entry's prompt_sha256]")


class SharedPrompt(ReportModel):
    """A part of a report holding a prompt (an eval, a turn): a long prompt is written once
    per report (`PromptTable`) and read back from there."""

    @field_serializer("prompt", check_fields=False)
    def _prompt_once(self, prompt: str) -> str:
        table = _PROMPT_TABLE.get()
        digest = self.__dict__.get("prompt_sha256")
        if table is None or digest is None:
            return prompt
        table.setdefault(digest, prompt)
        return _shared_stub(prompt)


class PromptTable(ReportModel):
    """A document (the run report) whose long prompts are written once, in `prompts`."""

    prompts: dict[str, str] = Field(default_factory=dict, exclude=True)
    """Read only: the prompts a report was written with, keyed by SHA-256; put back in
    place once read, and written from the evals and turns themselves."""

    @model_serializer(mode="wrap")
    def _prompts_once(self, handler: SerializerFunctionWrapHandler,
                      info: SerializationInfo) -> Any:
        if not info.mode_is_json():
            return handler(self)
        table: dict[str, str] = {}
        token = _PROMPT_TABLE.set(table)
        try:
            data = handler(self)
        finally:
            _PROMPT_TABLE.reset(token)
        if table and isinstance(data, dict):
            data["prompts"] = table
        return data

    @model_validator(mode="after")
    def _prompts_read_once(self) -> Self:
        """Each prompt written once (`prompts`) back in the evals and turns that sent it:
        one string, shared."""
        table = self.prompts
        if not table:
            return self
        pending: list[ReportModel] = [self]
        while pending:
            model = pending.pop()
            digest = model.__dict__.get("prompt_sha256")
            prompt = table.get(digest) if isinstance(digest, str) else None
            if isinstance(model, SharedPrompt) and isinstance(prompt, str):
                object.__setattr__(model, "prompt", prompt)
            if isinstance(model, AppCall) and model.system is None and model.system_sha256:
                object.__setattr__(model, "system", table.get(model.system_sha256))
            for value in model.__dict__.values():
                if isinstance(value, ReportModel):
                    pending.append(value)
                elif isinstance(value, list) and value and isinstance(value[0], ReportModel):
                    pending.extend(value)
        object.__setattr__(self, "prompts", {})
        return self


class TurnResult(SharedPrompt, UsageAndCost):
    turn: int
    prompt: str
    response: str
    latency_ms: float
    checks: list[CheckResult] = Field(default_factory=list)
    passed: bool = False
    output_tokens_estimated: bool = False
    line: int | None = None
    """Line of this turn's `prompt` in the suite file."""
    # Left out of a report when unused (`exclude_if`), so plain suites' reports read as
    # before these fields existed.
    tool_calls: list[ToolCallResult] = Field(default_factory=list, exclude_if=_empty)
    """Function calls made during this turn, in order; `response` is the final answer."""
    rounds: int = Field(default=1, exclude_if=_one)
    """Model answers this turn took (1 + answers that called tools)."""
    reasoning_tokens: int | None = Field(default=None, exclude_if=_none)
    """Of `usage.output_tokens`, those the provider reports as reasoning (priced as output)."""
    cached_input_tokens: int | None = Field(default=None, exclude_if=_none)
    """Of `usage.input_tokens`, those read from the provider's prompt cache (priced at the
    cache-read rate)."""
    response_chars: int | None = Field(default=None, exclude_if=_none)
    """Set only when `response` is an excerpt (`excerpt_answers`): the answer's full
    length in characters."""
    prompt_chars: int | None = Field(default=None, exclude_if=_none)
    """Set only when `prompt` is an excerpt (`MAX_REPORT_PROMPT_CHARS`): its full length."""
    prompt_sha256: str | None = Field(default=None, exclude_if=_none)
    """SHA-256 of the whole prompt, when longer than `SHARED_PROMPT_CHARS`: two prompts
    that differ past the excerpt still differ here, and the report's `prompts` holds the
    prompt under it."""
    app_model_calls: int | None = Field(default=None, exclude_if=_none)
    """An app target's turn: the model calls the app made through the recording proxy
    (`usage` and `cost_usd` are theirs, summed; docs/targets.md)."""
    first_token_ms: float | None = Field(default=None, exclude_if=_none)
    """An app target's turn: milliseconds until the first byte of its (streamed) reply."""
    app_calls: list[AppCall] = Field(default_factory=list, exclude_if=_empty)
    """An app target's turn: each model call the app made through the recording proxy, in
    order (docs/targets.md, "What the app sent")."""


MAX_REPORT_ANSWER_CHARS = 8_000
"""Characters of a turn's answer the report keeps once its eval or case has finished
(docs/security-secrets-and-inputs.md, "Memory"). Checks, graders and the next turn see
the whole answer while the conversation runs; a run of many long answers keeps only
this much of each, so its memory stays bounded by the number of turns."""


def cut_marker(length: int, what: str = "the answer") -> str:
    # ASCII: a non-ASCII character would double the memory of an ASCII excerpt.
    return (f"\n... [cut by turncheck: {what} had {length:,} characters; the report keeps "
            f"the first {MAX_REPORT_ANSWER_CHARS:,}]")


def _cut(text: str, what: str = "the answer", keep: int = MAX_REPORT_ANSWER_CHARS) -> str:
    if keep == MAX_REPORT_ANSWER_CHARS:
        return text[:keep] + cut_marker(len(text), what)
    return (text[:keep] + f"\n... [cut by turncheck: {what} had {len(text):,} characters; "
            f"the report keeps the first {keep:,}]")


def _excerpt_call(call: ToolCallResult) -> ToolCallResult:
    """`call` keeping at most `MAX_REPORT_ANSWER_CHARS` of its arguments' JSON text and
    of its name: both are model output, each up to the size of a whole answer."""
    update: dict[str, Any] = {}
    if len(call.name) > MAX_REPORT_ANSWER_CHARS:
        update["name"] = _cut(call.name, "the tool name")
    arguments = (call.arguments if isinstance(call.arguments, str)
                 else json.dumps(call.arguments, ensure_ascii=False))
    if len(arguments) > MAX_REPORT_ANSWER_CHARS:
        update["arguments"] = _cut(arguments, "the arguments")
        update["arguments_chars"] = len(arguments)
    return call.model_copy(update=update) if update else call


def _excerpt_check(check: CheckResult) -> CheckResult:
    """`check` keeping at most `MAX_REPORT_ANSWER_CHARS` of its detail and error, which
    may quote model output (a judge's reason, a tool call)."""
    update = {field: _cut(text, f"the check's {field}")
              for field, text in (("detail", check.detail), ("error", check.error))
              if text is not None and len(text) > MAX_REPORT_ANSWER_CHARS}
    return check.model_copy(update=update) if update else check


def prompt_fields(prompt: str) -> dict[str, Any]:
    """What a report keeps of `prompt`: the `prompt`, `prompt_chars` and `prompt_sha256`
    fields that change (none for a short prompt)."""
    kept, length, digest = kept_prompt(prompt)
    if digest is None:
        return {}
    return {"prompt": kept, "prompt_chars": length, "prompt_sha256": digest}


def _excerpt(turn: TurnResultT) -> TurnResultT:
    update: dict[str, Any] = prompt_fields(turn.prompt)
    length = len(turn.response)
    if length > MAX_REPORT_ANSWER_CHARS:
        update |= {"response": _cut(turn.response), "response_chars": length}
    calls = [_excerpt_call(call) for call in turn.tool_calls]
    if _changed(calls, turn.tool_calls):
        update["tool_calls"] = calls
    checks = [_excerpt_check(check) for check in turn.checks]
    if _changed(checks, turn.checks):
        update["checks"] = checks
    return turn.model_copy(update=update) if update else turn


def _changed(excerpts: Sequence[object], originals: Sequence[object]) -> bool:
    return any(new is not old for new, old in zip(excerpts, originals, strict=True))


class HasTurns(Protocol):
    @property
    def turns(self) -> Sequence[TurnResult]: ...
    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False
                   ) -> Any: ...


HasTurnsT = TypeVar("HasTurnsT", bound=HasTurns)
TurnResultT = TypeVar("TurnResultT", bound=TurnResult)


def excerpt_answers(result: HasTurnsT) -> HasTurnsT:
    """`result` (one finished, redacted conversation) keeping at most
    `MAX_REPORT_ANSWER_CHARS` of each answer and of each tool call's arguments, with the
    marker and the full length, and at most `MAX_REPORT_PROMPT_CHARS` of each prompt."""
    turns = [_excerpt(turn) for turn in result.turns]
    prompt = getattr(result, "prompt", None)
    update = prompt_fields(prompt) if isinstance(prompt, str) else {}
    if _changed(turns, result.turns):
        update["turns"] = turns
    if not update:
        return result
    copy: HasTurnsT = result.model_copy(update=update)
    return copy


RowT = TypeVar("RowT", bound=ReportModel)
_CONVERSATION_FIELDS = ("turns", "samples")


def writable(row: RowT) -> RowT:
    """`row` (a finished eval or protocol case), or, when it cannot be written as JSON,
    `row` as an error that says so, without its conversation: one row that cannot be
    written never costs the report the others."""
    try:
        row.model_dump_json()
    except (PydanticSerializationError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:300]
        update: dict[str, Any] = {
            "status": Status.ERROR,
            "error": f"turncheck could not write this result ({reason}); its conversation "
                     "is left out of the report"}
        update.update({name: [] for name in _CONVERSATION_FIELDS
                       if name in type(row).model_fields})
        return row.model_copy(update={name: value for name, value in update.items()
                                      if name in type(row).model_fields})
    return row


class SuiteHeader(ReportModel):
    """What names a suite of any kind in the report."""

    path: str
    name: str
    model: str
    provider: str
    cassette: str | None


class Sample(UsageAndCost):
    """One sample of a repeated case (eval or protocol case): an independent
    conversation, with its index, seed, status and spend. Each kind adds its outcome
    and its turns."""

    index: int
    seed: int | None = None
    status: Status
    error: str | None = None


class SampleResult(Sample):
    """One sample of a repeated eval."""

    passed_on_turn: int | None
    failed_on_turn: int | None = Field(default=None, exclude_if=_none)
    """Scripted turns: the turn whose checks failed first."""
    look: int = 0
    """The look of `repeat: auto` that took this sample (0: the first)."""
    turns: list[TurnResult] = Field(default_factory=list)
    conversation: ConversationEnd | None = Field(default=None, exclude_if=_none)
    """A simulated user's sample: how its conversation ended."""


class RepeatSummary(ReportModel):
    """What an eval's samples add up to (docs/statistics.md)."""

    passes: int
    """k: samples that passed."""
    samples: int
    """n: usable samples taken (passed or failed)."""
    unusable: int = 0
    """Samples that errored or were skipped: not counted in n."""
    pass_rate: float | None
    pass_rate_low: float
    """Wilson 95 % interval of the pass rate."""
    pass_rate_high: float
    pass_hat_n: bool
    """Every sample passed (pass^k at k = n)."""
    pass_at_n: bool
    """At least one sample passed (pass@k at k = n)."""
    pass_hat_k: dict[str, float] = Field(default_factory=dict)
    """pass^k by k (k = 1, 2, 4, … up to n): C(c, k) / C(n, k), the unbiased estimate of
    the chance that k fresh samples all pass (tau2-bench, Inspect)."""
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    """pass@k by k: 1 − C(n − c, k) / C(n, k), the chance that one of k samples passes."""
    flaky: bool
    """0 < k < n."""
    turn_of_pass: dict[str, int] = Field(default_factory=dict)
    """Samples per turn they passed on; failed samples under `fail` (errored and
    skipped ones are left out)."""
    min_pass: int
    """Passing samples the eval needed to pass."""
    adaptive: bool = False
    """Sampled by `repeat: auto`."""
    max_repeat: int
    """Most samples the eval could have taken."""
    samples_saved: int = 0
    """max_repeat − samples: calls adaptive sampling did not make."""
    paired: str | None = None
    """`repeat: auto` stopped together with the other side of a comparison (the pairing
    token both sides carry): the comparison may then test every look (stratified)."""
