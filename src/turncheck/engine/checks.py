"""Evaluate one level's checks against a turn's response (docs/suites.md).

Every check at a level is evaluated and reported, even after one fails. A
check that cannot be evaluated (judge answer unparseable, embedding call
failed) is recorded with an `error`, which makes the eval an error.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

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
    FollowUp,
    Item,
    LlmJudgeCheck,
    MatchCheck,
    MaxTokensCheck,
    MinTokensCheck,
    NotMatchCheck,
    NoToolCallCheck,
    OrGroup,
    SemanticCheck,
    ToolCallCheck,
    ToolOrderCheck,
    level_items,
)
from turncheck.providers.base import AnswerSchema, ChatMessage, ProviderError
from turncheck.report.run import CheckResult, ToolCallResult


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


def _calls_text(calls: Sequence[ToolCallResult]) -> str:
    if not calls:
        return "no tool calls"
    return "called " + ", ".join(f"{shorten(call.name)}({shorten(arguments_text(call.arguments))})"
                                 for call in calls)


def _tool_call(check: ToolCallCheck, ctx: TurnContext) -> CheckResult:
    named = [call for call in ctx.tool_calls if call.name == check.tool_call]
    matching = [call for call in named if check.args is None or (
        isinstance(call.arguments, dict) and args_match(check.args, call.arguments))]
    passed = len(matching) == check.times if check.times is not None else bool(matching)
    wanted = check.tool_call
    if check.args is not None:
        wanted += f"({arguments_text(check.args)})"
    if check.times is not None:
        wanted += f" × {check.times}"
    return CheckResult(type="tool_call", passed=passed,
                       detail=f"tool_call {wanted}: {_calls_text(ctx.tool_calls)}")


def _no_tool_call(check: NoToolCallCheck, ctx: TurnContext) -> CheckResult:
    name = check.no_tool_call
    offending = [c for c in ctx.tool_calls if name == "*" or c.name == name]
    return CheckResult(type="no_tool_call", passed=not offending,
                       detail=f"no_tool_call {name}: {_calls_text(ctx.tool_calls)}")


def _tool_order(check: ToolOrderCheck, ctx: TurnContext) -> CheckResult:
    """The named tools were called in this order; other calls may come between them."""
    calls = iter(call.name for call in ctx.tool_calls)
    passed = all(any(name == called for called in calls) for name in check.tool_order)
    return CheckResult(type="tool_order", passed=passed,
                       detail=f"tool_order {' → '.join(check.tool_order)}: "
                       f"{_calls_text(ctx.tool_calls)}")


async def evaluate_check(check: Check, ctx: TurnContext) -> CheckResult:
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
    return await _llm_judge(check, ctx)


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
