"""Run protocol suites: every case through the scripted turns, scored and weighted.

Cases run concurrently under the same global limit as evals and the suite's
`threads`; the turns of one case are sequential, in one conversation. For each
turn: pick the variant (the first whose `when` holds, else the default), render
its prompt with the case and the earlier turns, call the model, extract names
from the response, run every scorer. Then the case's aggregates, then the
suite's. Whatever happens inside a case, it ends with a status, so one case's
error never stops another. With `repeat`, each case takes several samples (independent
conversations), through the same machinery as evals (`engine/repeats.py`).
"""

from __future__ import annotations

import asyncio
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from turncheck.engine.interruption import STOP
from turncheck.engine.metering import metered_embed, metered_judge, session_redactor
from turncheck.engine.pricing import Pricer
from turncheck.engine.repeats import case_outcome, combine_cases, plan_for, run_samples
from turncheck.engine.schedule import open_suite_session, run_suite_cases, sent_system_prompt
from turncheck.engine.scorers import score
from turncheck.engine.scorers.base import ScoringContext
from turncheck.engine.scorers.extract import Extraction, extract
from turncheck.engine.session import SuiteSession
from turncheck.engine.tool_rounds import TurnAnswer, answer_turn
from turncheck.engine.tools import ToolScriptError, ToolSetup
from turncheck.formats import templates
from turncheck.formats.hierarchy import HierarchyError
from turncheck.formats.protocol import (
    MATCHED,
    Case,
    JudgeScaleSpec,
    ProtocolSuite,
    Scorer,
    ScorerRef,
    Turn,
    Variant,
)
from turncheck.formats.protocol_templates import SecretRef, protocol_environment
from turncheck.formats.suite import Message
from turncheck.formats.suite_loader import SuiteFile
from turncheck.providers.base import ChatMessage, ProviderError
from turncheck.providers.call_context import current_sample
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.protocol import (
    CaseAggregates,
    CaseResult,
    ProtocolAggregates,
    ProtocolSuiteResult,
    ProtocolTurn,
    ScorerResult,
    ScorerSummary,
    TurnSummary,
)
from turncheck.report.results import Status, StatusReason, excerpt_answers
from turncheck.report.spend import Usage, add_costs, spend_totals
from turncheck.targets.conversation import begin_conversation
from turncheck.text.user_regex import RegexWorkError, check_work, first_match

if TYPE_CHECKING:
    from turncheck.engine.settings import RunSettings

CaseCallback = Callable[[ProtocolSuiteResult, CaseResult], None]
_RENDER_ERRORS = (jinja2.TemplateError, HierarchyError, TypeError, ValueError, LookupError)


class CaseError(Exception):
    """Ends a case with status `error` and this reason."""


@dataclass
class _Meter:
    judge_usage: Usage = field(default_factory=Usage)
    judge_costs: list[float | None] = field(default_factory=list)


@dataclass
class _CaseState:
    messages: list[ChatMessage] = field(default_factory=list)
    turns: list[ProtocolTurn] = field(default_factory=list)
    views: dict[str, Record] = field(default_factory=dict)
    """What later templates see of each finished turn (`turns.<id>`)."""


class Record:
    """Read-only attribute (and item) access to a mapping, for templates.

    A plain dict would answer `turns.initial.items` with its `items` method; a record
    only has the keys it holds.
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)


def weighted_score(results: list[ScorerResult]) -> float | None:
    """Σ weight × score / Σ weight; the plain mean when every weight is 0; None without
    scorers or when one has no score."""
    if not results or any(r.score is None for r in results):
        return None
    total = sum(r.weight for r in results)
    if total > 0:
        return sum(r.weight * (r.score or 0.0) for r in results) / total
    return sum(r.score or 0.0 for r in results) / len(results)


def _result_view(result: ScorerResult) -> Record:
    view: dict[str, Any] = {"score": result.score, "error": result.error,
                            "detail": result.detail, "type": result.type}
    for detail in (result.check, result.list_f1, result.order, result.judge_scale,
                   result.self_assessment):
        if detail is not None:
            view.update(detail.model_dump())
    if result.list_f1 is not None:
        view["matched"] = [m.expected for m in result.list_f1.matched]
    return Record(view)


def _turn_view(turn: ProtocolTurn, extraction: Extraction) -> Record:
    return Record({
        "response": turn.response,
        "prompt": turn.prompt,
        "variant": turn.variant,
        "score": turn.score,
        "scores": Record({r.id: r.score for r in turn.scorers}),
        "results": Record({r.id: _result_view(r) for r in turn.scorers}),
        "items": list(turn.items),
        "outline": extraction.outline,
        "extracted": Record(dict(turn.extracted)),
    })


def _extracted(turn: Turn, response: str) -> dict[str, str | None]:
    try:
        check_work(list(turn.extract.values()), response)
    except RegexWorkError as exc:
        raise CaseError(f'turn "{turn.id}" extract: {exc}') from None
    values: dict[str, str | None] = {}
    for name, pattern in turn.extract.items():
        values[name] = first_match(pattern, response)
    return values


class _ProtocolRun:
    def __init__(
        self,
        suite_file: SuiteFile,
        protocol: ProtocolSuite,
        session: SuiteSession,
        settings: RunSettings,
        pricer: Pricer,
        limits: Sequence[asyncio.Semaphore] = (),
    ) -> None:
        self.file = suite_file
        self.protocol = protocol
        self.plan = plan_for(protocol.metadata, settings.repeat, alone=settings.pairing is None)
        self.limits = limits
        self.session = session
        self.pricer = pricer
        self.variables = {**(protocol.metadata.vars or {}), **settings.variables}
        self.redactor = session_redactor(session, settings.env)
        self.tools = ToolSetup.of(protocol.metadata)
        self.env = protocol_environment()
        self._templates: dict[str, jinja2.Template] = {}
        self._expressions: dict[str, Any] = {}

    # -- templates ---------------------------------------------------------------------

    def _var(self, name: str) -> str:
        if name not in self.variables:
            raise jinja2.TemplateRuntimeError(f"var {name!r} is not set")
        return self.variables[name]

    def _secret(self, name: str) -> SecretRef:
        # Bound late: the value enters only the outgoing request (providers/secrets.py).
        return SecretRef(name)

    def context(self, case: Case, state: _CaseState) -> dict[str, Any]:
        return {
            "case": Record({"id": case.id, "vars": Record(case.vars),
                            "ground_truth": Record(case.ground_truth)}),
            "turns": Record(dict(state.views)),
            "var": self._var,
            "secret": self._secret,
        }

    def render(self, source: str, context: dict[str, Any]) -> str:
        template = self._templates.get(source)
        if template is None:
            template = self._templates[source] = self.env.from_string(source)
        return template.render(context)

    def evaluate(self, source: str, context: dict[str, Any]) -> Any:
        expression = self._expressions.get(source)
        if expression is None:
            expression = self._expressions[source] = self.env.compile_expression(
                source, undefined_to_none=False
            )
        return expression(**context)

    def _checked(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except _RENDER_ERRORS as exc:
            raise CaseError(f"{what}: {exc}") from exc

    def system_prompt(self) -> list[ChatMessage]:
        """The system prompt and the metadata's opening messages, rendered."""
        if self.session.template_error is not None:
            raise CaseError(self.session.template_error)
        metadata = self.protocol.metadata
        opening = [Message(role="system", content=metadata.system_prompt)] \
            if metadata.system_prompt else []
        opening += metadata.messages or []
        try:
            return [ChatMessage(m.role, templates.render(m.content, self.variables))
                    for m in opening]
        except KeyError as exc:
            raise CaseError(f"system_prompt: {exc.args[0]}") from exc

    # -- a case ------------------------------------------------------------------------

    async def run_case(self, case: Case) -> CaseResult:
        """All samples of the case, each holding the run's limits while it runs."""
        sampled = await run_samples(self.plan, self.limits, partial(self.run_sample, case),
                                    partial(self.interrupted, case), case_outcome)
        return combine_cases(sampled.results, self.plan, self.protocol.metadata.seed)

    async def run_sample(self, case: Case) -> CaseResult:
        """One conversation of the case."""
        state = _CaseState()
        begin_conversation(f"{self.file.path}\0{case.id}\0{current_sample()}")
        try:
            state.messages = self.system_prompt()
            for number, turn in enumerate(self.protocol.turns, 1):
                await self._turn(number, turn, case, state)
            error = next(
                (f'turn "{t.id}": {r.error}' for t in state.turns for r in t.scorers if r.error),
                None,
            )
        except CaseError as exc:
            error = str(exc)
        except ProviderError as exc:
            error = exc.message
        except Exception as exc:  # a case must always end with a status
            error = f"internal error: {exc!r}"
        # Redacted whole first: a secret at the cut must not survive as a piece.
        return excerpt_answers(self.redactor.model(self._case_result(case, state, error)))

    def _variant(self, turn: Turn, context: dict[str, Any]) -> tuple[Variant | None, Any]:
        for variant in turn.variants:
            if variant.when is None:
                return variant, None
            value = self._checked(f'turn "{turn.id}", variant "{variant.id}" when',
                                  partial(self.evaluate, variant.when, context))
            if value:
                return variant, value
        return None, None

    async def _turn(self, number: int, turn: Turn, case: Case, state: _CaseState) -> None:
        context = self.context(case, state)
        variant, matched = self._variant(turn, context)
        if variant is not None:
            source, what = variant.prompt, f'turn "{turn.id}", variant "{variant.id}" prompt'
            prompt_context = {**context, MATCHED: matched}
        else:
            source, what = turn.prompt or "", f'turn "{turn.id}" prompt'
            prompt_context = context
        prompt = self._checked(what, lambda: self.render(source, prompt_context))
        state.messages.append(ChatMessage("user", prompt))
        answer = TurnAnswer()
        try:
            await answer_turn(self.session, self.pricer, state.messages, self.tools, answer)
        except ToolScriptError as exc:
            raise CaseError(f'turn "{turn.id}": {exc}') from exc
        state.messages += answer.messages
        response = answer.final
        assert response is not None
        extraction = extract(response.text)
        meter = _Meter()
        scoring = ScoringContext(
            response=response.text,
            reported_output_tokens=response.output_tokens,
            conversation=list(state.messages),
            extraction=extraction,
            render=lambda text: self.render(text, context),
            evaluate=lambda text: self.evaluate(text, context),
            judge=lambda messages, schema: metered_judge(
                self.session, self.pricer, messages, schema, meter
            ),
            embed=lambda inputs: metered_embed(self.session, self.pricer, inputs, meter),
        )
        results = [await score(scorer, scoring) for scorer in turn.scorers]
        checks = [r.check for r in results if r.check is not None]
        result = ProtocolTurn(
            turn=number,
            id=turn.id,
            variant=variant.id if variant is not None else None,
            prompt=prompt,
            response=response.text,
            checks=checks,
            passed=all(r.error is None for r in results) and all(c.passed for c in checks),
            **answer.record_fields,
            line=variant.line if variant is not None else turn.line,
            score=weighted_score(results),
            weight=turn.weight,
            scorers=results,
            items=extraction.names,
            extracted=_extracted(turn, response.text),
            judge_usage=meter.judge_usage,
            judge_cost_usd=add_costs(meter.judge_costs),
        )
        state.turns.append(result)
        state.views[turn.id] = _turn_view(result, extraction)

    # -- results -----------------------------------------------------------------------

    def _scorer(self, state: _CaseState, ref: ScorerRef | None) -> ScorerResult | None:
        if ref is None:
            return None
        turn = next((t for t in state.turns if t.id == ref.turn), None)
        if turn is None:
            return None
        return next((r for r in turn.scorers if r.id == ref.scorer), None)

    def _aggregates(self, state: _CaseState, error: str | None) -> CaseAggregates:
        spec = self.protocol.aggregates
        results = [r for t in state.turns for r in t.scorers if r.weight > 0]
        complete = error is None and len(state.turns) == len(self.protocol.turns)
        interactive = None
        total = sum(r.weight for r in results)
        if complete and total > 0:
            interactive = sum(r.weight * (r.score or 0.0) for r in results) / total
        final = self._scorer(state, spec.final_f1 or default_ref(self.protocol, "list_f1"))
        correction = None
        if spec.self_correction is not None:
            before = self._scorer(state, spec.self_correction.before)
            after = self._scorer(state, spec.self_correction.after)
            if before is not None and after is not None and None not in (before.score,
                                                                         after.score):
                correction = (after.score or 0.0) - (before.score or 0.0)
        assessed = self._scorer(
            state, spec.self_assessment or default_ref(self.protocol, "self_assessment")
        )
        detail = assessed.self_assessment if assessed is not None else None
        return CaseAggregates(
            interactive_reasoning=interactive,
            final_f1=None if final is None else final.score,
            self_correction=correction,
            self_assessment_estimate=None if detail is None else detail.estimate,
            self_assessment_actual=None if detail is None else detail.actual,
        )

    def interrupted(self, case: Case) -> CaseResult:
        result = self._case_result(case, _CaseState(), STOP.message())
        return result.model_copy(update={"reason": StatusReason.INTERRUPTED})

    def _case_result(self, case: Case, state: _CaseState, error: str | None) -> CaseResult:
        aggregates = self._aggregates(state, error)
        threshold = self.protocol.metadata.pass_threshold
        if error is not None:
            status = Status.ERROR
        elif threshold is not None and (
            aggregates.interactive_reasoning is None
            or aggregates.interactive_reasoning < threshold
        ):
            status = Status.FAIL
        else:
            status = Status.PASS
        return CaseResult(
            id=case.id,
            status=status,
            error=error,
            turns=state.turns,
            aggregates=aggregates,
            line=case.line,
        ).model_copy(update=spend_totals(state.turns))


def default_ref(protocol: ProtocolSuite, kind: str) -> ScorerRef | None:
    """The last `list_f1` (final F1) or first `self_assessment` scorer of the protocol."""
    found = [
        ScorerRef.model_construct(turn=t.id, scorer=s.id)
        for t in protocol.turns for s in t.scorers if s.kind == kind
    ]
    if not found:
        return None
    return found[-1] if kind == "list_f1" else found[0]


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def correlation(xs: list[float], ys: list[float]) -> tuple[float | None, str | None]:
    """Pearson's r, or (None, why) when it is undefined."""
    if len(xs) < 2:
        return None, f"needs at least 2 cases with a self-assessed estimate (have {len(xs)})"
    if _constant(xs) or _constant(ys):  # statistics.correlation misses 0.1, 0.1, 0.1 (rounding)
        return None, CONSTANT_SIDE
    try:
        value = statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None, CONSTANT_SIDE
    return (value, None) if math.isfinite(value) else (None, "undefined")


CONSTANT_SIDE = "undefined: the estimates or the measured scores are all equal"


def _constant(values: list[float]) -> bool:
    return max(values) - min(values) <= 1e-12


def suite_aggregates(cases: list[CaseResult]) -> ProtocolAggregates:
    pairs = [
        (c.aggregates.self_assessment_estimate, c.aggregates.self_assessment_actual)
        for c in cases
        if c.aggregates.self_assessment_estimate is not None
        and c.aggregates.self_assessment_actual is not None
    ]
    r, note = correlation([float(e) for e, _ in pairs], [float(a) for _, a in pairs])
    return ProtocolAggregates(
        cases=len(cases),
        passed=sum(c.status is Status.PASS for c in cases),
        failed=sum(c.status is Status.FAIL for c in cases),
        errors=sum(c.status is Status.ERROR for c in cases),
        interactive_reasoning=_mean([c.aggregates.interactive_reasoning for c in cases]),
        final_f1=_mean([c.aggregates.final_f1 for c in cases]),
        self_correction=_mean([c.aggregates.self_correction for c in cases]),
        meta_cognition=r,
        meta_cognition_cases=len(pairs),
        meta_cognition_note=note,
    )


def _scorer_summary(scorer: Scorer, ran: list[ProtocolTurn]) -> ScorerSummary:
    results = [r for t in ran for r in t.scorers if r.id == scorer.id]
    scale = list(scorer.spec.scale) if isinstance(scorer.spec, JudgeScaleSpec) else None
    ratings: list[float | None] = [float(r.judge_scale.rating) for r in results
                                   if r.judge_scale is not None]
    return ScorerSummary(id=scorer.id, type=scorer.kind, weight=scorer.weight,
                         label=scorer.label, mean_score=_mean([r.score for r in results]),
                         scale=scale, mean_rating=_mean(ratings) if scale else None)


def _turn_summaries(protocol: ProtocolSuite, cases: list[CaseResult]) -> list[TurnSummary]:
    summaries = []
    for turn in protocol.turns:
        conversations = [s.turns for c in cases for s in c.samples] + [
            c.turns for c in cases if not c.samples]
        ran = [t for turns in conversations for t in turns if t.id == turn.id]
        variants: dict[str, int] = {}
        for t in ran:
            if t.variant is not None:
                variants[t.variant] = variants.get(t.variant, 0) + 1
        summaries.append(TurnSummary(id=turn.id, weight=turn.weight,
                                     mean_score=_mean([t.score for t in ran]),
                                     variants=variants,
                                     scorers=[_scorer_summary(s, ran) for s in turn.scorers]))
    return summaries


def protocol_result(
    suite_file: SuiteFile, protocol: ProtocolSuite, session: SuiteSession,
    settings: RunSettings, cases: list[CaseResult],
) -> ProtocolSuiteResult:
    cassette = None if session.transport is None else cassette_path_for(Path(suite_file.path))
    return ProtocolSuiteResult(
        path=suite_file.path,
        name=protocol.metadata.name,
        model=session.metadata.model,
        provider=session.provider_name,
        cassette=None if cassette is None else cassette.as_posix(),
        cases_file=protocol.cases_file,
        pass_threshold=protocol.metadata.pass_threshold,
        turns=_turn_summaries(protocol, cases),
        cases=cases,
        aggregates=suite_aggregates(cases),
        aggregate_labels=protocol.declared_aggregates(),
        system_prompt=sent_system_prompt(protocol, session, settings),
        tools=list(ToolSetup.of(protocol.metadata).tools),
    ).model_copy(update=spend_totals(cases))


async def run_protocol(
    suite_file: SuiteFile,
    protocol: ProtocolSuite,
    settings: RunSettings,
    pricer: Pricer,
    limit: asyncio.Semaphore,
    on_case: CaseCallback | None = None,
) -> tuple[ProtocolSuiteResult, int]:
    """The protocol's result and the tokens it sent over the network."""
    session = open_suite_session(suite_file, protocol, settings)
    return await run_suite_cases(
        session, protocol.cases, protocol.metadata.threads, limit,
        partial(_ProtocolRun, suite_file, protocol, session, settings, pricer),
        partial(protocol_result, suite_file, protocol, session, settings), on_case)
