"""Run suites: multi-turn conversations per eval, concurrently (docs/suites.md).

Evals run concurrently under a global limit and each suite's `threads`; the
turns of one eval are sequential. Whatever happens inside an eval, it ends with
a status, so one eval's error never stops another.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turncheck._version import __version__
from turncheck.diagnostics import Diagnostic
from turncheck.engine.budget import SKIP_REASON, BudgetExceeded, Ledger
from turncheck.engine.checks import LevelOutcome, TurnContext, evaluate_level
from turncheck.engine.interruption import STOP
from turncheck.engine.metering import metered_embed, metered_judge, session_redactor
from turncheck.engine.pairing import Pairing, SideOfPair, run_id_of
from turncheck.engine.pricing import Pricer
from turncheck.engine.repeats import (
    combine,
    outcome_of,
    plan_for,
    run_samples,
    stopping_outcome,
)
from turncheck.engine.schedule import open_suite_session, run_suite_cases, sent_system_prompt
from turncheck.engine.scripted_turns import play_scripted_turns
from turncheck.engine.session import (
    SuiteSession,
)
from turncheck.engine.settings import RunSettings
from turncheck.engine.simulated_user import (
    CheckError,
    SimulatedConversation,
    SimulatorUnusable,
    setup_of,
)
from turncheck.engine.stale import RecordedTexts, stale_reference_hint
from turncheck.engine.summary import run_totals, with_suite_totals
from turncheck.engine.tool_rounds import TurnAnswer, answer_turn
from turncheck.engine.tools import ToolScriptError, ToolSetup
from turncheck.formats import templates
from turncheck.formats.suite import MAX_DEPTH, CheckList, Eval, Suite
from turncheck.formats.suite_loader import SuiteFile
from turncheck.providers.base import (
    AnswerSchema,
    ChatMessage,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.call_context import current_sample
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.results import (
    ConversationEnd,
    Status,
    StatusReason,
    ToolCallResult,
    TurnResult,
    excerpt_answers,
)
from turncheck.report.run import EvalResult, Report, SuiteResult
from turncheck.report.spend import NO_USAGE, Usage, add_costs
from turncheck.targets.conversation import begin_conversation

if TYPE_CHECKING:
    # Grading sample files (numpy, Jinja) loads only when a run has sample files.
    from turncheck.engine.calibration import SampleCallback
    from turncheck.engine.protocol import CaseCallback
    from turncheck.formats.protocol import ProtocolSuite
    from turncheck.formats.samples import SampleFile
    from turncheck.report.calibration import CalibrationFileResult
    from turncheck.report.protocol import ProtocolSuiteResult

EvalCallback = Callable[[SuiteResult, EvalResult], None]
__all__ = ["EvalCallback", "Side", "run_both_sides", "run_suite_files"]


class EvalError(Exception):
    """Ends an eval with status `error` and this reason."""


@dataclass
class _EvalState:
    messages: list[ChatMessage]
    turns: list[TurnResult] = field(default_factory=list)
    judge_usage: Usage = field(default_factory=lambda: NO_USAGE)
    judge_costs: list[float | None] = field(default_factory=list)
    failed_on_turn: int | None = None
    """Scripted turns: the turn whose checks failed first."""
    answered: list[ChatMessage] = field(default_factory=list)
    """The last turn's answer (with its tool rounds), not yet in `messages`."""
    simulator_usage: Usage = field(default_factory=lambda: NO_USAGE)
    simulator_costs: list[float | None] = field(default_factory=list)
    conversation: ConversationEnd | None = None
    """A simulated user's conversation: how it ended (`engine/simulated_user.py`)."""


def _variables(suite: Suite, settings: RunSettings) -> dict[str, str]:
    """What templates in the suite's text are rendered with: the suite's vars, then `--var`."""
    return {**(suite.metadata.vars or {}), **settings.variables}


class _SuiteRun:
    def __init__(
        self,
        suite_file: SuiteFile,
        suite: Suite,
        session: SuiteSession,
        settings: RunSettings,
        pricer: Pricer,
        limits: Sequence[asyncio.Semaphore] = (),
    ) -> None:
        self.limits = limits
        self.plan = plan_for(suite.metadata, settings.repeat, alone=settings.pairing is None)
        self.file = suite_file
        self.suite = suite
        self.session = session
        self.settings = settings
        self.pricer = pricer
        self.variables = _variables(suite, settings)
        self.redactor = session_redactor(session, settings.env)
        self.recorded_texts: RecordedTexts | None = None

    def render(self, text: str) -> str:
        try:
            return templates.render(text, self.variables)
        except KeyError as exc:
            raise EvalError(f"template: {exc.args[0]}") from exc

    def _render_or_keep(self, text: str) -> str:
        """`text` rendered, or as written when it cannot be (the eval's error says why)."""
        try:
            return self.render(text)
        except EvalError:
            return text

    def first_messages(self, prompt: str | None) -> list[ChatMessage]:
        """The system prompt and opening messages, then `prompt` (None: a simulated user
        writes the first message)."""
        if self.session.template_error is not None:
            raise EvalError(self.session.template_error)
        metadata = self.suite.metadata
        system = metadata.system_prompt
        messages = [ChatMessage("system", self.render(system))] if system else []
        messages += [ChatMessage(m.role, self.render(m.content)) for m in metadata.messages or ()]
        if prompt is None:
            return messages
        return [*messages, ChatMessage("user", self.render(prompt))]

    async def run_case(self, evaluation: Eval) -> EvalResult:
        """All samples of the eval, each holding the run's limits while it runs."""
        pairing = self.settings.pairing
        sampler = None
        if pairing is not None and self.plan.fixed is None:
            sampler = pairing.sampler(pairing.key(self.file.path, evaluation.display_name))
        try:
            sampled = await run_samples(self.plan, self.limits,
                                        partial(self.run_sample, evaluation),
                                        partial(self.interrupted, evaluation),
                                        outcome_of if sampler is None else stopping_outcome,
                                        sampler)
        finally:
            if sampler is not None:
                sampler.finish()
        paired = None if pairing is None or sampler is None or not sampler.paired \
            else pairing.pairing.token
        return combine(sampled.results, self.plan, self.suite.metadata.seed, sampled.looks,
                       paired)

    async def run_sample(self, evaluation: Eval) -> EvalResult:
        """One conversation of the eval."""
        state = _EvalState(messages=[])
        reason = None
        begin_conversation(f"{self.file.path}\0{evaluation.display_name}\0{current_sample()}",
                           evaluation.target)
        try:
            if evaluation.user is not None:
                state.messages = self.first_messages(None)
                status, passed_on = await SimulatedConversation(self, evaluation, state).run()
            else:
                state.messages = self.first_messages(evaluation.first_prompt)
                status, passed_on = await self._conversation(evaluation, state)
            error = None
        except BudgetExceeded:
            status, passed_on, error, reason = Status.SKIPPED, None, None, SKIP_REASON
        except SimulatorUnusable as exc:
            status, passed_on, error, reason = Status.ERROR, None, str(exc), \
                StatusReason.SIMULATOR
        except (EvalError, CheckError) as exc:
            status, passed_on, error = Status.ERROR, None, str(exc)
        except ProviderError as exc:
            status, passed_on, error = Status.ERROR, None, self._provider_error(exc, state)
        except Exception as exc:  # an eval must always end with a status
            status, passed_on, error = Status.ERROR, None, f"internal error: {exc!r}"
        result = self._result(evaluation, state, status, passed_on, error)
        if reason is not None:  # (a copy per eval otherwise)
            result = result.model_copy(update={"reason": reason})
        # Redacted whole first: a secret at the cut must not survive as a piece.
        return excerpt_answers(self.redactor.model(result))

    def _provider_error(self, exc: ProviderError, state: _EvalState) -> str:
        """The error, naming the referenced file behind a missing recording."""
        transport = self.session.transport
        if not isinstance(exc, RecordingMissing) or transport is None:
            return exc.message
        if self.recorded_texts is None:
            self.recorded_texts = RecordedTexts(transport.request_bodies())
        hint = stale_reference_hint(self.file.references, state.messages, self.recorded_texts)
        return exc.message if hint is None else f"{exc.message} ({hint})"

    async def take_turn(self, number: int, line: int, level: CheckList, state: _EvalState,
                        tools: ToolSetup, answer: TurnAnswer) -> tuple[TurnResult, LevelOutcome]:
        """One turn of another kind of conversation (a simulated user's): the model's or
        app's answer to the last message, checked by `level`."""
        return await self._turn(number, line, level, state, tools, answer)

    def check_context(self, state: _EvalState, answer: TurnAnswer | None,
                      tool_calls: Sequence[ToolCallResult]) -> TurnContext:
        """What checks of a whole conversation see: its last answer, every call."""
        final = None if answer is None else answer.final
        return TurnContext(
            response=final.text if final else "",
            reported_output_tokens=final.output_tokens if final else None,
            conversation=state.messages, render=self.render,
            judge=lambda messages, schema: self._judge(messages, schema, state),
            embed=lambda inputs: self._embed(inputs, state),
            tool_calls=tool_calls,
            app_calls=[call for turn in state.turns for call in turn.app_calls],
        )

    async def _conversation(self, evaluation: Eval, state: _EvalState) -> tuple[Status, int | None]:
        tools = ToolSetup.of(self.suite.metadata, evaluation)
        play = partial(self._until_passed, state=state, tools=tools)
        if evaluation.turns is not None:
            scripted = await play_scripted_turns(evaluation.turns, play,
                                                 partial(self._send_next, state))
            state.failed_on_turn = scripted.failed_on_turn
            return (Status.PASS, scripted.last_turn) if scripted.passed else (Status.FAIL, None)
        first = evaluation.steps[0]
        passed, turn_number = await play(first.checks, first.line)
        return (Status.PASS, turn_number) if passed else (Status.FAIL, None)

    def _send_next(self, state: _EvalState, prompt: str) -> None:
        state.messages += [*state.answered, ChatMessage("user", self.render(prompt))]

    async def _until_passed(self, level: CheckList, line: int, *, state: _EvalState,
                            tools: ToolSetup) -> tuple[bool, int]:
        """One user turn's checks, then the follow-ups they carry until a level passes or
        none is left: whether it passed, and the number of the last turn it took."""
        first = len(state.turns) + 1
        for turn_number in range(first, first + MAX_DEPTH + 1):
            answer = TurnAnswer()
            turn, outcome = await self._turn(turn_number, line, level, state, tools, answer)
            state.turns.append(turn)
            state.answered = answer.messages
            if outcome.errors:
                raise EvalError(f"turn {turn_number}: {outcome.errors[0]}")
            if outcome.passed:
                return True, turn_number
            if outcome.follow_up is None:
                return False, turn_number
            follow_up = outcome.follow_up
            self._send_next(state, follow_up.prompt)
            level, line = follow_up.checks, follow_up.line
        raise EvalError("conversation did not end")  # unreachable: depth is validated

    async def _turn(
        self, number: int, line: int, level: CheckList, state: _EvalState, tools: ToolSetup,
        answer: TurnAnswer,
    ) -> tuple[TurnResult, LevelOutcome]:
        prompt = state.messages[-1].content
        judged_before = (state.judge_usage, len(state.judge_costs))

        def turn_result(outcome: LevelOutcome) -> TurnResult:
            final = answer.final
            return TurnResult(
                turn=number,
                prompt=prompt,
                response=final.text if final else "",
                checks=outcome.results,
                passed=outcome.passed,
                line=line,
                judge_usage=_minus(state.judge_usage, judged_before[0]),
                judge_cost_usd=add_costs(state.judge_costs[judged_before[1]:]),
                **answer.record_fields,
            )

        try:
            await answer_turn(self.session, self.pricer, state.messages, tools, answer)
        except ToolScriptError as exc:
            state.turns.append(turn_result(LevelOutcome(False, [], None)))
            raise EvalError(f"turn {number}: {exc}") from exc
        except (BudgetExceeded, ProviderError):
            if answer.costs:  # earlier rounds were paid for: keep them in the report
                state.turns.append(turn_result(LevelOutcome(False, [], None)))
            raise
        assert answer.final is not None
        ctx = TurnContext(
            response=answer.final.text,
            reported_output_tokens=answer.final.output_tokens,
            conversation=[*state.messages, *answer.messages],
            render=self.render,
            judge=lambda messages, schema: self._judge(messages, schema, state),
            embed=lambda inputs: self._embed(inputs, state),
            tool_calls=answer.calls,
            app_calls=answer.app_calls,
            earlier_turns=state.turns,
        )
        try:
            outcome = await evaluate_level(level, ctx)
        except BudgetExceeded:
            # The model's answer was paid for: keep the turn (unchecked) in the report.
            state.turns.append(turn_result(LevelOutcome(False, [], None)))
            raise
        return turn_result(outcome), outcome

    async def _judge(
        self, messages: list[ChatMessage], schema: AnswerSchema, state: _EvalState
    ) -> str:
        return await metered_judge(self.session, self.pricer, messages, schema, state)

    async def _embed(self, inputs: list[str], state: _EvalState) -> list[list[float]]:
        return await metered_embed(self.session, self.pricer, inputs, state)

    def interrupted(self, evaluation: Eval) -> EvalResult:
        result = self._result(evaluation, _EvalState([]), Status.ERROR, None, STOP.message())
        return excerpt_answers(self.redactor.model(
            result.model_copy(update={"reason": StatusReason.INTERRUPTED})))

    def _result(
        self,
        evaluation: Eval,
        state: _EvalState,
        status: Status,
        passed_on: int | None,
        error: str | None,
    ) -> EvalResult:
        usage = sum((t.usage for t in state.turns), NO_USAGE)
        user = evaluation.user
        return EvalResult(
            name=evaluation.display_name,
            prompt=evaluation.first_prompt,
            status=status,
            passed_on_turn=passed_on,
            failed_on_turn=state.failed_on_turn,
            error=error,
            usage=usage,
            cost_usd=add_costs([t.cost_usd for t in state.turns]),
            judge_usage=state.judge_usage,
            judge_cost_usd=add_costs(state.judge_costs),
            turns=state.turns,
            line=evaluation.line,
            tools=self._own_tools(evaluation),
            simulator_usage=state.simulator_usage,
            simulator_cost_usd=add_costs(state.simulator_costs),
            simulator=None if user is None else setup_of(self.suite.metadata, user,
                                                         self._render_or_keep),
            conversation=state.conversation,
        )

    def _own_tools(self, evaluation: Eval) -> list[dict[str, Any]] | None:
        """The eval's tools for the report when they are not the suite's."""
        own = ToolSetup.of(self.suite.metadata, evaluation).tools
        return None if own == ToolSetup.of(self.suite.metadata).tools else list(own)


def _minus(after: Usage, before: Usage) -> Usage:
    if after == before:  # most turns call no judge: one shared zero, not one per turn
        return NO_USAGE
    return Usage(input_tokens=after.input_tokens - before.input_tokens,
                 output_tokens=after.output_tokens - before.output_tokens)


def _suite_result(
    suite_file: SuiteFile, suite: Suite, session: SuiteSession, settings: RunSettings,
    evals: list[EvalResult],
) -> SuiteResult:
    cassette = None if session.transport is None else cassette_path_for(Path(suite_file.path))
    bare = SuiteResult(
        path=suite_file.path,
        name=suite.metadata.name,
        model=session.metadata.model,
        provider=session.provider_name,
        cassette=None if cassette is None else cassette.as_posix(),
        system_prompt=sent_system_prompt(suite, session, settings),
        tools=list(ToolSetup.of(suite.metadata).tools),
    )
    return with_suite_totals(bare, evals)


async def _run_suite(
    suite_file: SuiteFile,
    suite: Suite,
    settings: RunSettings,
    pricer: Pricer,
    limit: asyncio.Semaphore,
    on_eval: EvalCallback | None,
) -> tuple[SuiteResult, int]:
    session = open_suite_session(suite_file, suite, settings)
    return await run_suite_cases(
        session, suite.evals, suite.metadata.threads, limit,
        partial(_SuiteRun, suite_file, suite, session, settings, pricer),
        partial(_suite_result, suite_file, suite, session, settings), on_eval)


async def _grade(samples: Sequence[SampleFile], settings: RunSettings, pricer: Pricer,
                 limit: asyncio.Semaphore, on_sample: SampleCallback | None
                 ) -> tuple[list[CalibrationFileResult], int]:
    """The graded sample files and the live tokens grading spent."""
    if not samples:
        return [], 0
    from turncheck.engine.calibration import grade_sample_files

    grading = await grade_sample_files(samples, settings, pricer, limit, on_sample)
    return grading.results, grading.live_tokens


async def _run_protocols(protocols: Sequence[tuple[SuiteFile, ProtocolSuite]],
                         settings: RunSettings, pricer: Pricer, limit: asyncio.Semaphore,
                         on_case: CaseCallback | None
                         ) -> list[tuple[ProtocolSuiteResult, int]]:
    """Each protocol suite's result and live tokens (scorers, Jinja: loaded only then)."""
    if not protocols:
        return []
    from turncheck.engine.protocol import run_protocol

    return list(await asyncio.gather(*(run_protocol(f, p, settings, pricer, limit, on_case)
                                       for f, p in protocols)))


async def run_suite_files(
    suite_files: list[SuiteFile],
    settings: RunSettings,
    diagnostics: list[Diagnostic] | None = None,
    on_eval: EvalCallback | None = None,
    *,
    samples: Sequence[SampleFile] = (),
    on_sample: SampleCallback | None = None,
    on_case: CaseCallback | None = None,
    limit: asyncio.Semaphore | None = None,
) -> Report:
    """Run the suites and grade the sample files (`samples`) that have a grader.

    Protocol suites (`SuiteFile.protocol`) run under the same global limit: `limit`, when
    given (shared with the other side of a comparison running at the same time), else
    one of `settings.concurrency` slots."""
    started = datetime.now(UTC)
    clock = time.perf_counter()
    pricer = Pricer.at(settings.price_timestamp)
    ledger = Ledger(pricer, settings.budget)
    settings = replace(settings, session=replace(settings.session, ledger=ledger,
                                                 app_threads=settings.concurrency))
    limit = limit or asyncio.Semaphore(max(1, settings.concurrency))
    runnable = [(f, f.suite) for f in suite_files if f.suite is not None]
    protocols = [(f, f.protocol) for f in suite_files if f.protocol is not None]
    pairing = settings.pairing
    if pairing is not None:
        pairing.declare(pairing.key(f.path, e.display_name) for f, s in runnable
                        for e in s.evals)
    try:
        ran, (calibrations, grading_tokens), scripted = await asyncio.gather(
            asyncio.gather(*(_run_suite(f, s, settings, pricer, limit, on_eval)
                             for f, s in runnable)),
            _grade(samples, settings, pricer, limit, on_sample),
            _run_protocols(protocols, settings, pricer, limit, on_case),
        )
    finally:
        if pairing is not None:
            pairing.close()
    suites = [suite for suite, _ in ran]
    return Report(
        turncheck_version=__version__,
        mode=settings.mode,
        commit=settings.commit,
        price_source=pricer.source,
        suites=list(suites),
        diagnostics=diagnostics or [],
        totals=run_totals(list(suites), pricer.unpriced),
        started_at=started.isoformat().replace("+00:00", "Z"),
        duration_s=round(time.perf_counter() - clock, 3),
        live_tokens=sum(tokens for _, tokens in ran) + grading_tokens
        + sum(tokens for _, tokens in scripted),
        calibrations=calibrations,
        protocols=[result for result, _ in scripted],
        budgets=ledger.outcomes(),
        run_id=run_id_of(pairing),
    )


@dataclass
class Side:
    """One side of a comparison to run: its suites, settings and sample files."""

    files: list[SuiteFile]
    settings: RunSettings
    diagnostics: list[Diagnostic] | None = None
    samples: Sequence[SampleFile] = ()


async def run_both_sides(head: Side, base: Side | None,
                         renames: Mapping[str, str] | None = None) -> tuple[Report, Report | None]:
    """Run a comparison's head and base at the same time, `repeat: auto` deciding each
    eval's looks on both sides' samples together (`engine/pairing.py`). `renames` maps
    head suite paths to base ones.

    `concurrency` stays what it was when the sides ran one after the other, per side: both
    share one limit of twice the head's `concurrency`, so a pull request takes about one
    side's time, and a side with less to do leaves its slots to the other."""
    if base is None:
        return await run_suite_files(head.files, head.settings, head.diagnostics,
                                samples=head.samples), None
    pairing = Pairing()
    to_head = {old: new for new, old in (renames or {}).items()}
    limit = asyncio.Semaphore(2 * max(1, head.settings.concurrency))

    def run(side: Side, handle: SideOfPair) -> Coroutine[Any, Any, Report]:
        settings = replace(side.settings, pairing=handle)
        return run_suite_files(side.files, settings, side.diagnostics, samples=side.samples,
                          limit=limit)

    head_report, base_report = await asyncio.gather(
        run(head, pairing.side("head")), run(base, pairing.side("base", to_head)))
    return head_report, base_report
