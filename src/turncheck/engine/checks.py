"""Evaluate one level's checks against a turn's response (docs/suites.md).

Every check at a level is evaluated and reported, even after one fails. A
check that cannot be evaluated (judge answer unparseable, embedding call
failed) is recorded with an `error`, which makes the eval an error.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from turncheck.engine import app_checks
from turncheck.engine.app_checks import Observed, SeenCall, calls_text, tool_calls_seen
from turncheck.engine.budget import BudgetExceeded
from turncheck.engine.globs import GlobError, glob_match
from turncheck.engine.judge import (
    VERDICT_ANSWER,
    JudgeAnswerError,
    grader_like,
    judge_messages,
    parse_verdict,
)
from turncheck.engine.tokens import completion_tokens
from turncheck.engine.tools import args_match, arguments_text, shorten
from turncheck.formats.suite import (
    Check,
    CheckList,
    CheckScope,
    FollowUp,
    Item,
    LlmJudgeCheck,
    MatchCheck,
    MaxModelCallsCheck,
    MaxTokensCheck,
    MaxToolCallsCheck,
    MaxTurnCostCheck,
    MaxTurnTokensCheck,
    MinTokensCheck,
    ModelUsedCheck,
    NeverCalledCheck,
    NoLoopCheck,
    NotMatchCheck,
    NoToolCallCheck,
    OrGroup,
    SemanticCheck,
    SystemPromptCheck,
    ToolCallCheck,
    ToolOrderCheck,
    ToolSequenceCheck,
    level_items,
)
from turncheck.providers.base import AnswerSchema, ChatMessage, ProviderError
from turncheck.report.app_calls import AppCall
from turncheck.report.results import CheckResult, ToolCallResult, TurnResult


@dataclass
class TurnContext:
    """What a check may look at, and the calls it may make."""

    response: str
    reported_output_tokens: int | None
    conversation: Sequence[ChatMessage]
    render: Callable[[str], str]
    judge: Callable[[list[ChatMessage], AnswerSchema], Awaitable[str]]
    embed: Callable[[list[str]], Awaitable[list[list[float]]]]
    tool_calls: Sequence[ToolCallResult] = ()
    """The function calls made during this turn (tool checks judge these)."""
    app_calls: Sequence[AppCall] = ()
    """An app target's turn: the app's model calls the proxy saw."""
    earlier_turns: Sequence[TurnResult] = ()
    """The conversation's earlier turns (checks with `scope: conversation`)."""

    def observed(self, scope: CheckScope = "turn") -> Observed:
        if scope == "turn":
            return Observed(self.tool_calls, self.app_calls)
        earlier = self.earlier_turns
        return Observed([*(c for turn in earlier for c in turn.tool_calls), *self.tool_calls],
                        [*(c for turn in earlier for c in turn.app_calls), *self.app_calls])


@dataclass
class LevelOutcome:
    passed: bool
    results: list[CheckResult] = field(default_factory=list)
    follow_up: FollowUp | None = None

    @property
    def errors(self) -> list[str]:
        return [r.error for r in self.results if r.error]


@dataclass
class _ItemOutcome:
    passed: bool
    follow_up: FollowUp | None


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


async def _match(check: MatchCheck | NotMatchCheck, ctx: TurnContext) -> CheckResult:
    kind = "match" if isinstance(check, MatchCheck) else "not_match"
    pattern = ctx.render(check.match if isinstance(check, MatchCheck) else check.not_match)
    detail = f'{kind} "{shorten(pattern)}"'
    try:
        matched = glob_match(pattern, ctx.response)
    except GlobError as exc:
        return CheckResult(type=kind, passed=False, detail=detail, error=f"{kind}: {exc}")
    return CheckResult(type=kind, passed=matched if kind == "match" else not matched,
                       detail=detail)


async def _tokens(check: MinTokensCheck | MaxTokensCheck, ctx: TurnContext) -> CheckResult:
    count, estimated = completion_tokens(ctx.reported_output_tokens, ctx.response)
    note = " (estimated)" if estimated else ""
    if isinstance(check, MinTokensCheck):
        return CheckResult(
            type="min_tokens",
            passed=count >= check.min_tokens,
            detail=f"min_tokens {check.min_tokens}: {count} tokens{note}",
        )
    return CheckResult(
        type="max_tokens",
        passed=count <= check.max_tokens,
        detail=f"max_tokens {check.max_tokens}: {count} tokens{note}",
    )


async def _semantic(check: SemanticCheck, ctx: TurnContext) -> CheckResult:
    expected = ctx.render(check.semantic.expected)
    threshold = check.semantic.threshold
    try:
        response_vector, expected_vector = await ctx.embed([ctx.response, expected])
        similarity = cosine(response_vector, expected_vector)
    except BudgetExceeded:
        raise  # the eval ends skipped, not with a failed check
    except (ProviderError, ValueError) as exc:
        message = getattr(exc, "message", str(exc))
        return CheckResult(
            type="semantic",
            passed=False,
            detail=f"semantic ≥ {threshold}: not evaluated",
            error=f"semantic check failed: {message}",
        )
    return CheckResult(
        type="semantic",
        passed=similarity >= threshold,
        detail=f"semantic ≥ {threshold}: similarity {similarity:.3f}",
    )


async def _llm_judge(check: LlmJudgeCheck, ctx: TurnContext) -> CheckResult:
    criteria = ctx.render(check.llm_judge.criteria)
    try:
        answer = await ctx.judge(judge_messages(ctx.conversation, criteria), VERDICT_ANSWER)
        verdict = parse_verdict(answer)
    except BudgetExceeded:
        raise  # the eval ends skipped, not with a failed check
    except ProviderError as exc:
        return CheckResult(
            type="llm_judge",
            passed=False,
            detail=f'llm_judge "{criteria}"',
            error=f"judge call failed: {exc.message}",
        )
    except JudgeAnswerError as exc:
        return CheckResult(
            type="llm_judge", passed=False, detail=f'llm_judge "{criteria}"', error=str(exc)
        )
    injected = grader_like(ctx.conversation)
    if injected is None:
        return CheckResult(type="llm_judge", passed=verdict.passed,
                           detail=f'llm_judge "{criteria}": {verdict.reason}')
    warning = (f"the conversation's assistant text holds an instruction to a grader "
               f"({injected}): this verdict may follow it rather than the criteria")
    return CheckResult(type="llm_judge", passed=verdict.passed, warning=warning,
                       detail=f'llm_judge "{criteria}": {verdict.reason} (warning: {warning})')


def _calls_text(calls: Sequence[SeenCall], note: str) -> str:
    if note:  # the app's model calls: each named by where it was made
        return calls_text(calls) + note
    if not calls:
        return "no tool calls"
    return "called " + ", ".join(call.text for call in calls)


def _tool_call(check: ToolCallCheck, ctx: TurnContext) -> CheckResult:
    calls, note = tool_calls_seen(ctx.observed(), check.source)
    named = [call for call in calls if call.name == check.tool_call]
    matching = [call for call in named if check.args is None or (
        isinstance(call.arguments, dict) and args_match(check.args, call.arguments))]
    passed = len(matching) == check.times if check.times is not None else bool(matching)
    wanted = check.tool_call
    if check.args is not None:
        wanted += f"({arguments_text(check.args)})"
    if check.times is not None:
        wanted += f" × {check.times}"
    return CheckResult(type="tool_call", passed=passed,
                       detail=f"tool_call {wanted}: {_calls_text(calls, note)}")


def _no_tool_call(check: NoToolCallCheck, ctx: TurnContext) -> CheckResult:
    name = check.no_tool_call
    calls, note = tool_calls_seen(ctx.observed(), check.source)
    offending = [c for c in calls if name == "*" or c.name == name]
    return CheckResult(type="no_tool_call", passed=not offending,
                       detail=f"no_tool_call {name}: {_calls_text(calls, note)}")


def _tool_order(check: ToolOrderCheck, ctx: TurnContext) -> CheckResult:
    """The named tools were called in this order; other calls may come between them."""
    calls, note = tool_calls_seen(ctx.observed(), check.source)
    names = iter(call.name for call in calls)
    passed = all(any(name == called for called in names) for name in check.tool_order)
    return CheckResult(type="tool_order", passed=passed,
                       detail=f"tool_order {' → '.join(check.tool_order)}: "
                       f"{_calls_text(calls, note)}")


def _trajectory(check: Check, ctx: TurnContext) -> CheckResult | None:
    """A trajectory check's result; None for any other check."""
    if not isinstance(check, ToolSequenceCheck | NeverCalledCheck | MaxToolCallsCheck
                      | NoLoopCheck):
        return None
    calls, note = tool_calls_seen(ctx.observed(check.scope), check.source)
    if isinstance(check, ToolSequenceCheck):
        return app_checks.tool_sequence(check, calls, note)
    if isinstance(check, NeverCalledCheck):
        return app_checks.never_called(check, calls, note)
    if isinstance(check, MaxToolCallsCheck):
        return app_checks.max_tool_calls(check, calls, note)
    return app_checks.no_loop(check, calls, note)


def _app_call_check(check: Check, calls: Sequence[AppCall]) -> CheckResult | None:
    """A check on the app's model calls' result; None for any other check."""
    if isinstance(check, MaxModelCallsCheck):
        return app_checks.max_model_calls(check, calls)
    if isinstance(check, ModelUsedCheck):
        return app_checks.model_used(check, calls)
    if isinstance(check, SystemPromptCheck):
        return app_checks.system_prompt(check, calls)
    if isinstance(check, MaxTurnTokensCheck):
        return app_checks.max_turn_tokens(check, calls)
    if isinstance(check, MaxTurnCostCheck):
        return app_checks.max_turn_cost(check, calls)
    return None


async def evaluate_check(check: Check, ctx: TurnContext) -> CheckResult:
    judged = _trajectory(check, ctx) or _app_call_check(check, ctx.app_calls)
    if judged is not None:
        return judged
    if isinstance(check, ToolCallCheck):
        return _tool_call(check, ctx)
    if isinstance(check, NoToolCallCheck):
        return _no_tool_call(check, ctx)
    if isinstance(check, ToolOrderCheck):
        return _tool_order(check, ctx)
    if isinstance(check, MatchCheck | NotMatchCheck):
        return await _match(check, ctx)
    if isinstance(check, MinTokensCheck | MaxTokensCheck):
        return await _tokens(check, ctx)
    if isinstance(check, SemanticCheck):
        return await _semantic(check, ctx)
    if isinstance(check, LlmJudgeCheck):
        return await _llm_judge(check, ctx)
    raise AssertionError(f"no evaluation for {type(check).__name__}")  # every kind has one


async def _evaluate_items(
    items: Sequence[Item], any_of: bool, ctx: TurnContext, results: list[CheckResult], depth: int
) -> _ItemOutcome:
    """Evaluate a list or `or` group; returns whether it passed and its follow-up if it failed."""
    passes: list[bool] = []
    attached: FollowUp | None = None
    standalone: FollowUp | None = None
    for item in items:
        if isinstance(item, FollowUp):
            standalone = item
            continue
        if isinstance(item, OrGroup):
            header = len(results)
            outcome = await _evaluate_items(item.or_, True, ctx, results, depth + 1)
            members = len(item.members)
            results.insert(
                header,
                CheckResult(
                    type="or",
                    passed=outcome.passed,
                    depth=depth,
                    detail=f"or: at least one of {members} must pass",
                ),
            )
            passes.append(outcome.passed)
            if not outcome.passed and attached is None:
                attached = outcome.follow_up
            continue
        result = await evaluate_check(item, ctx)
        # Checks are built at depth 0; copying one that is already there cost a tenth
        # of the turn's own (non-HTTP) work.
        results.append(result if result.depth == depth else
                       result.model_copy(update={"depth": depth}))
        passes.append(result.passed)
        if not result.passed and attached is None:
            attached = item.follow_up
    passed = any(passes) if any_of else all(passes)
    return _ItemOutcome(passed, None if passed else (attached or standalone))


async def evaluate_level(level: CheckList, ctx: TurnContext) -> LevelOutcome:
    items, any_of = level_items(level)
    results: list[CheckResult] = []
    outcome = await _evaluate_items(items, any_of, ctx, results, 1 if any_of else 0)
    if isinstance(level, OrGroup):
        header = CheckResult(type="or", passed=outcome.passed, depth=0,
                             detail=f"or: at least one of {len(level.members)} must pass")
        results.insert(0, header)
    return LevelOutcome(outcome.passed, results, outcome.follow_up)
