"""One turn's model answers: rounds of tool calls answered from the script, then the
final answer (shared by eval and protocol runs)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from turncheck.engine.pricing import Pricer
from turncheck.engine.session import SuiteSession
from turncheck.engine.tools import (
    MAX_CALLS_PER_ANSWER,
    ToolScriptError,
    ToolSetup,
    kept_arguments,
    parse_arguments,
)
from turncheck.engine.usage import chat_usage
from turncheck.providers.base import ChatMessage, ChatResponse, ToolCall
from turncheck.report.app_calls import AppCall
from turncheck.report.results import ToolCallResult
from turncheck.report.spend import Usage, add_costs
from turncheck.targets.base import TargetResponse

MAX_TOOL_ROUND_BYTES = 16 * 1024 * 1024
"""What the tool rounds of one turn may add to the conversation, all rounds together
(answers that call tools, their calls' names and arguments, the tool results): one
answer's cap. Every round resends the whole history, so a per-answer cap alone would let
64 rounds of large arguments grow each request, and the run's memory, 64-fold."""

MAX_APP_CALLS_KEPT = 64
"""An app's model calls in one turn whose record the report keeps (all are counted, and
checks judge all)."""


def _round_bytes(response: ChatResponse, results: Sequence[ChatMessage]) -> int:
    texts = [response.text, *(part for call in response.tool_calls
                              for part in (call.name, call.arguments)),
             *(message.content for message in results)]
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)


class AnswerFields(TypedDict):
    """What a turn's record (an eval's `TurnResult`, a protocol's `ProtocolTurn`) keeps of
    its model answers: one list for both kinds, so neither drops a field the other has."""

    usage: Usage
    cost_usd: float | None
    latency_ms: float
    output_tokens_estimated: bool
    tool_calls: list[ToolCallResult]
    rounds: int
    reasoning_tokens: int | None
    cached_input_tokens: int | None
    app_model_calls: int | None
    first_token_ms: float | None
    app_calls: list[AppCall]


@dataclass
class TurnAnswer:
    """One turn's model answers so far: the rounds of tool calls and the final answer."""

    messages: list[ChatMessage] = field(default_factory=list)
    """The turn's assistant and tool messages, its final answer last."""
    calls: list[ToolCallResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    costs: list[float | None] = field(default_factory=list)
    latency_ms: float = 0.0
    estimated: bool = False
    final: ChatResponse | None = None
    reasoning_tokens: int | None = None
    """Summed over rounds; None when no round reported any."""
    cached_input_tokens: int | None = None
    round_bytes: int = 0
    """What the turn's tool rounds added to the conversation so far (UTF-8 bytes)."""
    app_model_calls: int | None = None
    """An app target's turn: the model calls the app made (through the proxy)."""
    first_token_ms: float | None = None
    app_calls: list[AppCall] = field(default_factory=list)
    """An app target's turn: what each of its model calls sent and got."""

    def add(self, response: ChatResponse, usage: Usage, cost: float | None) -> None:
        self.final = response
        self.usage += usage
        self.costs.append(cost)
        self.latency_ms += response.latency_ms
        self.estimated = self.estimated or response.output_tokens is None
        self.reasoning_tokens = _plus(self.reasoning_tokens, response.reasoning_tokens)
        self.cached_input_tokens = _plus(self.cached_input_tokens, response.cached_input_tokens)

    @property
    def record_fields(self) -> AnswerFields:
        """The turn's answers as turn-record fields; `rounds` is at least 1 (a turn cut
        short before its first answer still counts as one)."""
        return {"usage": self.usage, "cost_usd": add_costs(self.costs),
                "latency_ms": round(self.latency_ms, 1),
                "output_tokens_estimated": self.estimated, "tool_calls": self.calls,
                "rounds": max(1, len(self.costs)),
                "reasoning_tokens": self.reasoning_tokens,
                "cached_input_tokens": self.cached_input_tokens,
                "app_model_calls": self.app_model_calls, "first_token_ms": self.first_token_ms,
                "app_calls": self.app_calls[:MAX_APP_CALLS_KEPT]}

    def add_app_reply(self, response: TargetResponse, pricer: Pricer) -> None:
        """An app's reply: the model calls it made (each priced as its own model) and the
        tool calls it ran itself (reported, not answered)."""
        costs = [pricer.cost(chat_usage(c), c.model or "", c.api, c.cached_input_tokens)
                 for c in response.calls]
        usage = chat_usage(response)
        self.add(response, usage, add_costs(costs) if costs else 0.0)
        self.estimated = self.estimated or response.tokens_estimated
        self.app_model_calls = len(response.calls)
        self.app_calls = [call.record.model_copy(update={"cost_usd": cost})
                          for call, cost in zip(response.calls, costs, strict=True)
                          if call.record is not None]
        self.first_token_ms = response.first_token_ms
        self.calls += [ToolCallResult(round=1, name=call.name, arguments=parse_app_arguments(
            call.arguments), by_app=True) for call in response.tool_calls]
        self.messages.append(ChatMessage("assistant", response.text))

    def answer_call(self, call: ToolCall, round_number: int, tools: ToolSetup) -> ChatMessage:
        """The tool message answering `call`; the call is recorded even when it cannot be
        answered (ToolScriptError)."""
        try:
            arguments = parse_arguments(call)
        except ToolScriptError as problem:
            self.calls.append(ToolCallResult(round=round_number, name=call.name,
                                             arguments=kept_arguments(call, problem)))
            raise
        record = ToolCallResult(round=round_number, name=call.name, arguments=arguments)
        self.calls.append(record)
        record.result = tools.answer(call, arguments)
        return ChatMessage("tool", record.result, tool_call_id=call.id)



async def answer_turn(session: SuiteSession, pricer: Pricer, history: Sequence[ChatMessage],
                      tools: ToolSetup, answer: TurnAnswer) -> None:
    """The model's final answer to `history`, answering its tool calls round after round
    (at most `tools.max_rounds` answers with calls before the final one). `answer` holds
    every round so far, also when this raises (ToolScriptError, a provider error)."""
    for round_number in range(1, tools.max_rounds + 2):
        response = await session.chat([*history, *answer.messages], tools.tools, tools.choice)
        if isinstance(response, TargetResponse):
            answer.add_app_reply(response, pricer)
            return
        usage = chat_usage(response)
        answer.add(response, usage,
                   pricer.cost(usage, session.model, session.price_provider_id,
                               response.cached_input_tokens or 0))
        if not response.tool_calls:
            answer.messages.append(ChatMessage("assistant", response.text))
            return
        answer.messages.append(ChatMessage("assistant", response.text,
                                           tool_calls=response.tool_calls))
        if round_number > tools.max_rounds:
            raise ToolScriptError(f"the model still called tools after max_tool_rounds "
                                  f"({tools.max_rounds}) rounds of tool calls")
        if len(response.tool_calls) > MAX_CALLS_PER_ANSWER:
            raise ToolScriptError(f"the model made {len(response.tool_calls)} tool calls in "
                                  f"one answer; at most {MAX_CALLS_PER_ANSWER} are answered")
        results = [answer.answer_call(call, round_number, tools)
                   for call in response.tool_calls]
        answer.messages.extend(results)
        answer.round_bytes += _round_bytes(response, results)
        if answer.round_bytes > MAX_TOOL_ROUND_BYTES:
            raise ToolScriptError(
                f"the tool rounds of this turn added {answer.round_bytes:,} bytes to the "
                f"conversation (calls, arguments and results); one turn's rounds may add "
                f"at most {MAX_TOOL_ROUND_BYTES:,}, since each round resends them all")


def parse_app_arguments(text: str) -> object:
    """An app's reported call arguments: the JSON value, or the text when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _plus(total: int | None, count: int | None) -> int | None:
    return total if count is None else (total or 0) + count
