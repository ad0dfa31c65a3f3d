"""Checks on what the app did (docs/suites.md, "Checks on what the app did"): the tool
calls the model asked for, read from the app's model calls when the app reports none;
trajectory checks over a turn or the conversation; and the app's model calls themselves
(how many, which model, which system prompt, tokens and cost). A failing check names the
call that broke it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turncheck.engine.globs import GlobError, glob_match
from turncheck.engine.tools import arguments_text, shorten
from turncheck.formats.suite import (
    CheckScope,
    ContainsSpec,
    MaxModelCallsCheck,
    MaxToolCallsCheck,
    MaxTurnCostCheck,
    MaxTurnTokensCheck,
    ModelUsedCheck,
    NeverCalledCheck,
    NoLoopCheck,
    SystemPromptCheck,
    ToolSequenceCheck,
    ToolSource,
)
from turncheck.report.app_calls import AppCall
from turncheck.report.results import CheckResult, ToolCallResult

APP_SOURCE_NOTE = " (from the app's model calls)"


@dataclass(frozen=True, slots=True)
class SeenCall:
    """A tool call a check judges, and where it was made."""

    name: str
    arguments: Any
    where: str
    """E.g. `model call 2` (the app's) or `round 1` (the model's own)."""

    @property
    def text(self) -> str:
        return f"{shorten(self.name)}({shorten(arguments_text(self.arguments))})"

    def named(self) -> str:
        return f"{self.text} at {self.where}"


@dataclass(frozen=True, slots=True)
class Observed:
    """What a check of a turn (or of the conversation so far) may look at."""

    reported: Sequence[ToolCallResult]
    """The tool calls of the answer: the model's own, or those the app reports."""
    app_calls: Sequence[AppCall]
    """The app's model calls the proxy saw (empty unless the target is an app)."""


def tool_calls_seen(observed: Observed, source: ToolSource | None
                    ) -> tuple[list[SeenCall], str]:
    """The tool calls a check judges and the note saying where they came from: `source`
    when given, else the reported ones when there are any, else the app's."""
    use_app = source == "app" or (source is None and not observed.reported
                                  and bool(observed.app_calls))
    if not use_app:
        return [SeenCall(call.name, call.arguments, f"round {call.round}")
                for call in observed.reported], ""
    return [SeenCall(tool.name, tool.arguments, f"model call {number}")
            for number, call in enumerate(observed.app_calls, 1)
            for tool in call.tool_calls], APP_SOURCE_NOTE


def calls_text(calls: Sequence[SeenCall]) -> str:
    if not calls:
        return "no tool calls"
    return "called " + ", ".join(call.named() for call in calls)


def _scoped(kind: str, scope: CheckScope) -> str:
    return kind if scope == "turn" else f"{kind} (conversation)"


def tool_sequence(check: ToolSequenceCheck, calls: list[SeenCall], note: str) -> CheckResult:
    names = [call.name for call in calls]
    wanted = check.tool_sequence
    if check.order == "exact":
        passed = names == wanted
    elif check.order == "any_order":
        passed = all(names.count(name) >= wanted.count(name) for name in set(wanted))
    else:
        remaining = iter(names)
        passed = all(any(name == called for called in remaining) for name in wanted)
    detail = (f"{_scoped('tool_sequence', check.scope)} {' → '.join(wanted)} "
              f"({check.order.replace('_', ' ')}): {calls_text(calls)}{note}")
    return CheckResult(type="tool_sequence", passed=passed, detail=detail)


def never_called(check: NeverCalledCheck, calls: list[SeenCall], note: str) -> CheckResult:
    offending = [call for call in calls if call.name == check.never_called]
    found = ("called " + ", ".join(call.named() for call in offending)) if offending \
        else "not called"
    return CheckResult(type="never_called", passed=not offending,
                       detail=f"{_scoped('never_called', check.scope)} {check.never_called}: "
                              f"{found}{note}")


def max_tool_calls(check: MaxToolCallsCheck, calls: list[SeenCall], note: str) -> CheckResult:
    counted = [call for call in calls if check.tool is None or call.name == check.tool]
    what = f" of {check.tool}" if check.tool else ""
    passed = len(counted) <= check.max_tool_calls
    listed = "" if passed else ": " + _listed([call.named() for call in counted])
    return CheckResult(type="max_tool_calls", passed=passed,
                       detail=f"{_scoped('max_tool_calls', check.scope)} "
                              f"{check.max_tool_calls}{what}: {len(counted)} "
                              f"call{'' if len(counted) == 1 else 's'}{listed}{note}")


def no_loop(check: NoLoopCheck, calls: list[SeenCall], note: str) -> CheckResult:
    run: list[SeenCall] = []
    for call in calls:
        same = run and (run[-1].name, run[-1].arguments) == (call.name, call.arguments)
        run = [*run, call] if same else [call]
        if len(run) >= check.no_loop:
            return CheckResult(type="no_loop", passed=False,
                               detail=f"{_scoped('no_loop', check.scope)} {check.no_loop}: "
                                      f"{call.text} {len(run)} times in a row, "
                                      f"{run[0].where} to {call.where}{note}")
    return CheckResult(type="no_loop", passed=True,
                       detail=f"{_scoped('no_loop', check.scope)} {check.no_loop}: "
                              f"no call repeated {check.no_loop} times in a row{note}")


LISTED = 5
"""Calls a failing check names; more are counted."""


def _listed(names: list[str]) -> str:
    more = len(names) - LISTED
    return ", ".join(names[:LISTED]) + (f" and {more} more" if more > 0 else "")


def _call_name(number: int, call: AppCall) -> str:
    return f"model call {number} ({call.model or 'no model'}, {call.provider} {call.api})"


def max_model_calls(check: MaxModelCallsCheck, calls: Sequence[AppCall]) -> CheckResult:
    passed = len(calls) <= check.max_model_calls
    listed = "" if passed else ": " + _listed(
        [_call_name(number, call) for number, call in enumerate(calls, 1)])
    return CheckResult(type="max_model_calls", passed=passed,
                       detail=f"max_model_calls {check.max_model_calls}: the app made "
                              f"{len(calls)}{listed}")


def model_used(check: ModelUsedCheck, calls: Sequence[AppCall]) -> CheckResult:
    detail = f'model_used "{shorten(check.model_used)}"'
    try:
        other = [(number, call) for number, call in enumerate(calls, 1)
                 if not glob_match(check.model_used, call.model or "")]
    except GlobError as exc:
        return CheckResult(type="model_used", passed=False, detail=detail,
                           error=f"model_used: {exc}")
    if not calls:
        return CheckResult(type="model_used", passed=False,
                           detail=f"{detail}: the app made no model call")
    if other:
        return CheckResult(type="model_used", passed=False, detail=detail + ": " + ", ".join(
            f"{_call_name(number, call)} used another" for number, call in other))
    models = sorted({call.model or "" for call in calls})
    return CheckResult(type="model_used", passed=True, detail=f"{detail}: {', '.join(models)}")


def system_prompt(check: SystemPromptCheck, calls: Sequence[AppCall]) -> CheckResult:
    wanted = check.system_prompt
    shown = (f'contains "{shorten(wanted.contains)}"' if isinstance(wanted, ContainsSpec)
             else f'"{shorten(wanted)}"')
    detail = f"system_prompt {shown}"
    sent = [(number, call.system) for number, call in enumerate(calls, 1) if call.system]
    try:
        matched = [number for number, text in sent if _prompt_matches(wanted, text)]
    except GlobError as exc:
        return CheckResult(type="system_prompt", passed=False, detail=detail,
                           error=f"system_prompt: {exc}")
    if matched:
        return CheckResult(type="system_prompt", passed=True,
                           detail=f"{detail}: sent in model call {matched[0]}")
    seen = "; ".join(f'model call {number} sent "{shorten(text)}"' for number, text in sent)
    return CheckResult(type="system_prompt", passed=False,
                       detail=f"{detail}: {seen or 'no model call sent a system prompt'}")


def _prompt_matches(wanted: str | ContainsSpec, text: str) -> bool:
    if isinstance(wanted, ContainsSpec):
        return wanted.contains in text
    return glob_match(wanted, text)


def max_turn_tokens(check: MaxTurnTokensCheck, calls: Sequence[AppCall]) -> CheckResult:
    total = sum((call.input_tokens or 0) + (call.output_tokens or 0) for call in calls)
    estimated = " (estimated)" if any(call.tokens_estimated for call in calls) else ""
    passed = total <= check.max_turn_tokens
    largest = "" if passed or not calls else "; the largest: " + _largest(
        calls, lambda call: (call.input_tokens or 0) + (call.output_tokens or 0), "tokens")
    return CheckResult(type="max_turn_tokens", passed=passed,
                       detail=f"max_turn_tokens {check.max_turn_tokens:,}: {total:,} tokens"
                              f"{estimated} in {len(calls)} model calls{largest}")


def max_turn_cost(check: MaxTurnCostCheck, calls: Sequence[AppCall]) -> CheckResult:
    costs = [call.cost_usd for call in calls]
    if any(cost is None for cost in costs):
        unpriced = next(number for number, cost in enumerate(costs, 1) if cost is None)
        return CheckResult(type="max_turn_cost_usd", passed=False,
                           detail=f"max_turn_cost_usd {check.max_turn_cost_usd}: not judged",
                           error=f"max_turn_cost_usd: model call {unpriced} "
                                 f"({calls[unpriced - 1].model}) has no price")
    total = sum(cost or 0.0 for cost in costs)
    passed = total <= check.max_turn_cost_usd
    largest = "" if passed or not calls else "; the largest: " + _largest(
        calls, lambda call: call.cost_usd or 0.0, "USD")
    return CheckResult(type="max_turn_cost_usd", passed=passed,
                       detail=f"max_turn_cost_usd {check.max_turn_cost_usd}: ${total:.6f} in "
                              f"{len(calls)} model calls{largest}")


def _largest(calls: Sequence[AppCall], size: Any, unit: str) -> str:
    number, call = max(enumerate(calls, 1), key=lambda pair: size(pair[1]))
    return f"{_call_name(number, call)}, {size(call):,} {unit}"
