"""A simulated user's conversation (docs/suites.md, "Simulated users").

Per kind of conversation only "how the next user turn is chosen" differs: here the
scripted `opening` messages, then a model playing the user (the simulator) writes each
next message, or stops. The assistant's side is the eval runner's own turn (model or
app, tool rounds, `each_turn` checks); the `success` checks are the ordinary checks,
judged once on the whole conversation when it ends. Every conversation reports how it
ended (`Ending`); an ending the simulator caused is an unusable sample, never a fail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from turncheck.engine.budget import BudgetExceeded
from turncheck.engine.checks import LevelOutcome, TurnContext, evaluate_level
from turncheck.engine.judge import (
    VERDICT_ANSWER,
    JudgeAnswerError,
    grader_like,
    parse_verdict,
    transcript,
    unfenced,
)
from turncheck.engine.pricing import Pricer
from turncheck.engine.session import SuiteSession
from turncheck.engine.tool_rounds import TurnAnswer
from turncheck.engine.tools import ToolSetup
from turncheck.engine.usage import chat_usage
from turncheck.formats.suite import CheckList, Eval, Metadata, SimulatedUser, Simulator
from turncheck.providers.base import AnswerSchema, ChatMessage, ProviderError
from turncheck.report.results import (
    CheckResult,
    ConversationEnd,
    Ending,
    SimulatorSetup,
    Status,
    ToolCallResult,
    TurnResult,
)
from turncheck.report.spend import Usage

SIMULATOR_PROMPT_VERSION = "turncheck-simulated-user/1"
REVIEW_PROMPT_VERSION = "turncheck-simulator-review/1"
STOP_TOKEN = "###STOP###"
STOP_REASONS = ("goal_met", "gave_up")
"""Reasons that only name the ending (not shown again as its detail)."""
DEFAULT_SIMULATOR_TEMPERATURE = 0.0
MAX_SIMULATED_MESSAGE_CHARS = 4_000
NO_CHECKS: CheckList = []

SIMULATOR_ANSWER = AnswerSchema(
    "turncheck_simulated_user",
    {
        "type": "object",
        "properties": {
            "message": {"type": "string", "maxLength": MAX_SIMULATED_MESSAGE_CHARS},
            "stop": {"type": "boolean"},
            "reason": {"type": "string", "maxLength": 160},
        },
        "required": ["message", "stop", "reason"],
        "additionalProperties": False,
    },
)

_ANSWER_FORMAT = f"""Answer with JSON only: {{"message": "<the user's next message>", \
"stop": false, "reason": ""}}.
When the goal has been met, stop: {{"message": "", "stop": true, "reason": "goal_met"}}.
When it clearly cannot be met, give up: {{"message": "", "stop": true, "reason": "gave_up"}}.
(As plain text: just the message, or {STOP_TOKEN} to end the conversation.)"""

_REVIEW_PROMPT = f"""You review a test ({REVIEW_PROMPT_VERSION}). A model played a user \
talking to an assistant, following the persona and goal below. Decide whether the USER \
stayed in that persona and pursued that goal (never answering as the assistant, never \
changing the goal). Judge only the user, not the assistant. Answer with JSON only, exactly \
of the form {{"pass": true or false, "reason": "one short sentence"}}."""


class SimulatorUnusable(Exception):
    """The simulator made the conversation unusable (`Ending` says how): an error-like
    status, never a fail of the app."""


class CheckError(Exception):
    """A check could not be evaluated (a judge's answer unreadable): the eval errors."""



class ConversationState(Protocol):
    """What the eval runner keeps of one conversation."""

    messages: list[ChatMessage]
    turns: list[TurnResult]
    simulator_usage: Usage
    simulator_costs: list[float | None]
    conversation: ConversationEnd | None


State = TypeVar("State", bound=ConversationState)
HostState = TypeVar("HostState", bound=ConversationState, contravariant=True)


class Host(Protocol[HostState]):
    """The eval runner's side of the conversation: its session, turns and checks."""

    @property
    def session(self) -> SuiteSession: ...

    @property
    def pricer(self) -> Pricer: ...

    def render(self, text: str) -> str: ...

    async def take_turn(self, number: int, line: int, level: CheckList, state: HostState,
                        tools: ToolSetup, answer: TurnAnswer
                        ) -> tuple[TurnResult, LevelOutcome]: ...

    def check_context(self, state: HostState, answer: TurnAnswer | None,
                      tool_calls: Sequence[ToolCallResult]) -> TurnContext: ...


@dataclass(frozen=True)
class Decision:
    """The simulator's answer: the next message, or a stop (and why)."""

    message: str
    stop: bool
    reason: str

    @property
    def detail(self) -> str | None:
        """The reason, unless it only names the ending ("goal met", "Gave up."): "Ended:
        goal met after 2 turns" is not followed by "— goal met"."""
        words = self.reason.lower().replace(" ", "_").strip("._!")
        return self.reason if self.reason and words not in STOP_REASONS else None

    @property
    def ending(self) -> Ending:
        words = self.reason.lower().replace(" ", "_")
        return Ending.GAVE_UP if "gave_up" in words or "give_up" in words else Ending.GOAL_MET


def _as_is(text: str) -> str:
    return text


def setup_of(metadata: Metadata, user: SimulatedUser,
             render: Callable[[str], str] = _as_is) -> SimulatorSetup:
    """The simulator as this eval pins it: the eval's own settings over the suite's, its
    texts rendered (`{{var()}}`, `{{secret()}}`) by `render`."""
    pinned = metadata.simulator or Simulator()
    model = user.model or pinned.model
    assert model is not None, "validation requires a simulator model"
    temperature = next((t for t in (user.temperature, pinned.temperature) if t is not None),
                       DEFAULT_SIMULATOR_TEMPERATURE)
    return SimulatorSetup(
        model=model, temperature=float(temperature),
        seed=user.seed if user.seed is not None else pinned.seed,
        prompt_version=SIMULATOR_PROMPT_VERSION, persona=_rendered(user.persona, render),
        goal=_rendered(user.goal, render), instructions=_rendered(user.instructions, render),
        opening=[render(text) for text in user.opening or ()],
    )


def _rendered(text: str | None, render: Callable[[str], str]) -> str | None:
    return None if text is None else render(text)


def simulator_system_prompt(setup: SimulatorSetup) -> str:
    parts = [f"You are testing an AI assistant by playing a user who talks to it "
             f"({SIMULATOR_PROMPT_VERSION})."]
    for label, text in (("Persona", setup.persona), ("Goal", setup.goal),
                        ("Instructions", setup.instructions)):
        if text:
            parts.append(f"{label}: {text}")
    parts.append("Write only what this user would type next, in their voice: never answer "
                 "as the assistant, never say that you are a simulation, and do not stop "
                 "before the goal is met or clearly cannot be.")
    parts.append(_ANSWER_FORMAT)
    return "\n".join(parts)


def simulator_messages(setup: SimulatorSetup, conversation: Sequence[ChatMessage]
                       ) -> list[ChatMessage]:
    """What the simulator is asked: its role, then the conversation as text (no role
    flipping, so its own first message is never lost) and the answer format last."""
    shown = [m for m in conversation if m.role in ("user", "assistant") and m.content]
    lines = [f"{'USER (you)' if m.role == 'user' else 'ASSISTANT'}: {m.content}" for m in shown]
    story = ("The conversation so far:\n\n" + "\n\n".join(lines)) if lines else \
        "The conversation has not started: write the user's first message."
    return [ChatMessage("system", simulator_system_prompt(setup)),
            ChatMessage("user", f"{story}\n\n{_ANSWER_FORMAT}")]


def parse_decision(text: str) -> Decision:
    """The simulator's answer: JSON `{message, stop, reason}`, or plain text taken as the
    message (`###STOP###` in it ends the conversation). Raises SimulatorUnusable."""
    data = None
    try:
        data = json.loads(unfenced(text))
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and "message" in data:
        message, stop, reason = data.get("message"), data.get("stop", False), \
            data.get("reason") or ""
        if not isinstance(message, str) or not isinstance(stop, bool) \
                or not isinstance(reason, str):
            raise SimulatorUnusable(f"the simulator's answer has the wrong types: {text[:200]}")
    else:
        message, stop, reason = text, False, ""
    if STOP_TOKEN in message:
        message, stop = message.replace(STOP_TOKEN, "").strip(), True
    if not stop and not message.strip():
        raise SimulatorUnusable("the simulator's message was empty")
    return Decision(message.strip(), stop, reason.strip())


class SimulatedConversation(Generic[State]):
    """One conversation of an eval with `user`, run against the host's model or app."""

    def __init__(self, host: Host[State], evaluation: Eval, state: State) -> None:
        assert evaluation.user is not None and evaluation.success is not None
        self.host = host
        self.evaluation = evaluation
        self.user = evaluation.user
        self.success = evaluation.success
        self.state = state
        self.setup = setup_of(host.session.metadata, evaluation.user, host.render)
        self.tools = ToolSetup.of(host.session.metadata, evaluation)
        self.each_turn_failed: int | None = None
        self.last_answer: TurnAnswer | None = None

    @property
    def sent(self) -> int:
        return len(self.state.turns)

    async def run(self) -> tuple[Status, int | None]:
        """The eval's status and the turn it passed on; raises SimulatorUnusable."""
        opening = list(self.setup.opening)
        while True:
            if opening:
                decision = Decision(opening.pop(0), False, "")
            else:
                decision = await self._next_decision()
            if decision.stop:
                return await self._stopped(decision)
            if self.sent >= self.user.max_turns:
                return await self._judged(Ending.MAX_TURNS,
                                          f"the simulator wanted to go on after "
                                          f"{self.user.max_turns} turns")
            await self._send(decision.message)

    async def _next_decision(self) -> Decision:
        try:
            response, model_id, price_id = await self.host.session.simulate(
                self.setup.model, simulator_messages(self.setup, self.state.messages),
                self.setup.temperature, self.setup.seed, SIMULATOR_ANSWER)
        except BudgetExceeded:
            raise  # not sent: the eval ends skipped, as any budget stop
        except ProviderError as exc:
            self._end(Ending.SIMULATOR_ERROR, f"simulator call failed: {exc.message}")
            raise SimulatorUnusable(f"simulator call failed: {exc.message}") from exc
        usage = chat_usage(response)
        self.state.simulator_usage += usage
        self.state.simulator_costs.append(self.host.pricer.cost(usage, model_id, price_id))
        try:
            return parse_decision(response.text)
        except SimulatorUnusable as exc:
            self._end(Ending.SIMULATOR_ERROR, str(exc))
            raise

    async def _send(self, message: str) -> None:
        number = self.sent + 1
        self.state.messages.append(ChatMessage("user", message))
        answer = TurnAnswer()
        level = self.evaluation.each_turn or NO_CHECKS
        try:
            turn, outcome = await self.host.take_turn(number, self.evaluation.line, level,
                                                      self.state, self.tools, answer)
        except BudgetExceeded:
            raise
        except ProviderError as exc:
            self._end(Ending.TARGET_ERROR, exc.message, turns=number)
            raise
        self.state.turns.append(turn)
        self.state.messages.extend(answer.messages)
        self.last_answer = answer
        if outcome.errors:  # a check that cannot be evaluated: the eval errors, as anywhere
            raise CheckError(f"turn {number}: {outcome.errors[0]}")
        if not outcome.passed and self.each_turn_failed is None:
            self.each_turn_failed = number

    async def _stopped(self, decision: Decision) -> tuple[Status, int | None]:
        floor = max(1, self.user.min_turns or 1)
        if self.sent < floor:
            detail = (f"the simulator stopped after {self.sent} of at least {floor} turns"
                      + (f" ({decision.reason})" if decision.reason else ""))
            self._end(Ending.MIN_TURNS_NOT_REACHED, detail)
            raise SimulatorUnusable(detail)
        return await self._judged(decision.ending, decision.detail)

    async def _judged(self, ending: Ending, detail: str | None) -> tuple[Status, int | None]:
        """The success checks on the whole conversation, then the review; the status."""
        calls = [call for turn in self.state.turns for call in turn.tool_calls]
        outcome = await evaluate_level(
            self.success, self.host.check_context(self.state, self.last_answer, calls))
        review = await self._review() if self.evaluation.review else None
        self._end(ending, detail, success=outcome.results, review=review,
                  warning=self._goal_warning(ending))
        if outcome.errors:
            raise CheckError(f"success: {outcome.errors[0]}")
        if review is not None and review.error is not None:
            raise CheckError(f"review: {review.error}")
        if review is not None and not review.passed:
            raise SimulatorUnusable(f"the review found the simulator out of its role: "
                                    f"{review.detail}")
        passed = ending is Ending.GOAL_MET and outcome.passed and self.each_turn_failed is None
        return (Status.PASS, self.sent) if passed else (Status.FAIL, None)

    def _goal_warning(self, ending: Ending) -> str | None:
        """A goal the simulator met in a conversation whose assistant text instructs it
        ("GOAL MET"): said so, as a judge's verdict would be."""
        if ending is not Ending.GOAL_MET:
            return None
        injected = grader_like([m for m in self.state.messages if m.role == "assistant"])
        return None if injected is None else (
            f"the simulator ended with its goal met, and the conversation's assistant text "
            f"holds an instruction to it or a grader ({injected}): it may have followed it")

    async def _review(self) -> CheckResult:
        brief = "\n".join(f"{label}: {text}" for label, text in (
            ("Persona", self.setup.persona), ("Goal", self.setup.goal),
            ("Instructions", self.setup.instructions)) if text)
        shown = [m for m in self.state.messages if m.role in ("user", "assistant")]
        messages = [ChatMessage("system", _REVIEW_PROMPT),
                    ChatMessage("user", f"<brief>\n{brief}\n</brief>\n\n<conversation>\n"
                                f"{transcript(shown)}\n</conversation>")]
        context = self.host.check_context(self.state, self.last_answer, ())
        try:
            verdict = parse_verdict(await context.judge(messages, VERDICT_ANSWER))
        except BudgetExceeded:
            raise
        except ProviderError as exc:
            return CheckResult(type="review", passed=False, detail="review",
                               error=f"review call failed: {exc.message}")
        except JudgeAnswerError as exc:
            return CheckResult(type="review", passed=False, detail="review", error=str(exc))
        injected = grader_like(shown)
        warning = None if injected is None else (
            f"the conversation's assistant text holds an instruction to a grader ({injected}):"
            " this review and the simulator's own judgement may follow it")
        return CheckResult(type="review", passed=verdict.passed, warning=warning,
                           detail=f"review: {verdict.reason}" + (
                               f" (warning: {warning})" if warning else ""))

    def _end(self, ending: Ending, detail: str | None, *, turns: int | None = None,
             success: list[CheckResult] | None = None, review: CheckResult | None = None,
             warning: str | None = None) -> None:
        if self.each_turn_failed is not None and ending is not Ending.TARGET_ERROR:
            note = f"turn {self.each_turn_failed} failed its each_turn checks"
            detail = f"{detail}; {note}" if detail else note
        self.state.conversation = ConversationEnd(
            ending=ending, turns=self.sent if turns is None else turns, detail=detail,
            success=success or [], review=review, warning=warning)
