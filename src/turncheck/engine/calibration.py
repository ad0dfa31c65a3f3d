"""Grade sample files with their graders: does the judge still agree with the labels?

Each sample file with a valid `[grader]` gets one `GraderSession` (its provider,
through the cassette beside the sample file: same modes, retries and scrubbing as
suites). Samples are graded concurrently under the run's global limit and priced
with the run's `Pricer`. Whatever happens to one sample ends as a row: a grader
answer that is not `{"score": -3..3, "reason": str}`, a provider failure, a missing
recording or a template error is an *error row*, never a score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from turncheck.engine.interruption import STOP
from turncheck.engine.judge import (
    GRADER_PROMPT_VERSION,
    JudgeAnswerError,
    grader_messages,
    parse_grade,
    transcript,
)
from turncheck.engine.pricing import Pricer
from turncheck.engine.redaction import Redactor
from turncheck.engine.session import GraderSession, open_grader_session, run_then_close
from turncheck.engine.usage import chat_usage
from turncheck.formats.grader import Grader
from turncheck.formats.samples import Sample, SampleFile
from turncheck.providers.base import ChatMessage, ChatResponse, ProviderError
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.factory import env_credentials
from turncheck.report.calibration import (
    AgreementStats,
    CalibrationFileResult,
    ConfusionMatrix,
    GraderInfo,
    SampleGrade,
    badge_for,
    is_below,
    percent_text,
)
from turncheck.report.spend import Usage, add_costs
from turncheck.stats.agreement import bootstrap_interval, cohen_kappa, confusion, within_one
from turncheck.text.counts import counted
from turncheck.text.environment import sandboxed_environment

if TYPE_CHECKING:
    from turncheck.engine.settings import RunSettings

MAX_PROMPT_CHARS = 200_000
SampleCallback = Callable[[CalibrationFileResult, SampleGrade], None]


@dataclass
class Grading:
    """What grading a run's sample files produced."""

    results: list[CalibrationFileResult] = field(default_factory=list)
    live_tokens: int = 0


class _PromptError(Exception):
    """The grader prompt could not be built for a sample."""


def grader_template(source: str) -> jinja2.Template | str:
    """The compiled `prompt` template of a grader, or why it cannot be used."""
    return _template(source)


def _template(source: str) -> jinja2.Template | str:
    """The compiled prompt template, or why it cannot be used."""
    try:
        return sandboxed_environment().from_string(source)
    except jinja2.TemplateError as exc:
        return f"grader prompt: {exc}"


def grader_prompt(template: jinja2.Template, sample: Sample) -> str:
    """A `prompt` grader's prompt for `sample`; the label is never passed in."""
    try:
        text = template.render(
            messages=[{"role": m.role, "content": m.content or ""} for m in sample.messages],
            conversation=transcript(sample.messages),
            sample={"id": sample.id, "tags": list(sample.tags)},
        )
    except (jinja2.TemplateError, ArithmeticError, TypeError, ValueError) as exc:
        raise _PromptError(f"grader prompt: {type(exc).__name__}: {exc}") from None
    if not text.strip():
        raise _PromptError("grader prompt rendered to nothing")
    if len(text) > MAX_PROMPT_CHARS:
        raise _PromptError(f"grader prompt is longer than {MAX_PROMPT_CHARS:,} characters")
    return text


class _FileGrading:
    def __init__(self, session: GraderSession, pricer: Pricer, env: Mapping[str, str]) -> None:
        self.session = session
        self.pricer = pricer
        grader = session.grader
        self.template = _template(grader.prompt) if grader.prompt is not None else None
        self.redactor = Redactor([*env_credentials(env), *session.url_credentials])

    def messages(self, sample: Sample) -> list[ChatMessage]:
        grader = self.session.grader
        if grader.criteria is not None:
            return grader_messages(sample.messages, grader.criteria)
        if isinstance(self.template, str) or self.template is None:
            raise _PromptError(self.template or "grader has neither criteria nor prompt")
        return [ChatMessage("user", grader_prompt(self.template, sample))]

    async def grade(self, sample: Sample) -> SampleGrade:
        return self.redactor.model(await self._grade(sample))

    async def _grade(self, sample: Sample) -> SampleGrade:
        try:
            response = await self.session.grade(self.messages(sample))
        except _PromptError as exc:
            return _error_row(sample, str(exc))
        except ProviderError as exc:
            return _error_row(sample, f"grader call failed: {exc.message}")
        except Exception as exc:  # a sample must always end as a row
            return _error_row(sample, f"internal error: {exc!r}")
        return self._row(sample, response)

    def _row(self, sample: Sample, response: ChatResponse) -> SampleGrade:
        usage = chat_usage(response)
        spent = _Spent(
            usage, self.pricer.cost(usage, self.session.model, self.session.price_provider_id),
            round(response.latency_ms, 1),
        )
        try:
            grade = parse_grade(response.text)
        except JudgeAnswerError as exc:
            return _error_row(sample, str(exc), spent)
        return _sample_row(sample, spent, score=grade.score, reason=grade.reason)


@dataclass(frozen=True)
class _Spent:
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    """0 when no answer came back: nothing was spent."""
    latency_ms: float = 0.0


def _sample_row(
    sample: Sample, spent: _Spent, *, score: int | None = None, reason: str | None = None,
    error: str | None = None,
) -> SampleGrade:
    distance = None if score is None else abs(score - sample.expected.score)
    return SampleGrade(
        id=sample.id, line=sample.line, label=sample.expected.score,
        label_reason=sample.expected.reason, score=score, distance=distance,
        badge=badge_for(distance), reason=reason, error=error,
        input_tokens=spent.usage.input_tokens, output_tokens=spent.usage.output_tokens,
        cost_usd=spent.cost_usd, latency_ms=spent.latency_ms,
    )


def _error_row(sample: Sample, error: str, spent: _Spent | None = None) -> SampleGrade:
    return _sample_row(sample, spent or _Spent(), error=error)


def grader_info(grader: Grader, provider_name: str) -> GraderInfo:
    return GraderInfo(
        model=grader.model,
        provider=provider_name,
        kind=grader.kind,
        prompt_version=GRADER_PROMPT_VERSION if grader.kind == "criteria" else None,
        instructions=grader.instructions,
        line=grader.line,
    )


def summarize(
    file: SampleFile, info: GraderInfo | None, rows: list[SampleGrade], cassette: str | None
) -> CalibrationFileResult:
    """Agreement, mean distance and totals of a file's rows (see `calibration_report`)."""
    scored = [row.distance for row in rows if row.distance is not None]
    agreed = sum(distance == 0 for distance in scored)
    return CalibrationFileResult(
        path=file.path,
        grader=info,
        note=None if rows else _not_graded_note(file),
        cassette=cassette,
        min_agreement=None if file.grader is None else file.grader.min_agreement,
        valid_samples=len(file.samples),
        skipped_samples=file.skipped,
        samples=rows,
        agreed=agreed,
        errors=len(rows) - len(scored),
        agreement_percent=100 * agreed / len(rows) if rows else None,
        mean_distance=sum(scored) / len(scored) if scored else None,
        input_tokens=sum(row.input_tokens for row in rows),
        output_tokens=sum(row.output_tokens for row in rows),
        cost_usd=add_costs([row.cost_usd for row in rows]),
        agreement=agreement_stats(rows, None if file.grader is None
                                  else file.grader.pass_threshold),
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def agreement_stats(rows: list[SampleGrade], threshold: int | None) -> AgreementStats | None:
    """κ, weighted κ with bootstrap intervals, within-one agreement and, with a
    threshold, the confusion matrix, over the rows the grader scored."""
    pairs = [(row.label, row.score) for row in rows if row.score is not None]
    if not pairs:
        return None
    labels, scores = [p[0] for p in pairs], [p[1] for p in pairs]
    plain = bootstrap_interval(labels, scores)
    weighted = bootstrap_interval(labels, scores, weighted=True)
    within = within_one(labels, scores)
    matrix = None
    if threshold is not None:
        found = confusion(labels, scores, threshold)
        matrix = ConfusionMatrix(
            threshold=threshold, true_positive=found.true_positive,
            false_negative=found.false_negative, false_positive=found.false_positive,
            true_negative=found.true_negative, tpr=_rounded(found.tpr), tnr=_rounded(found.tnr))
    return AgreementStats(
        scored=len(pairs), kappa=_rounded(cohen_kappa(labels, scores)),
        kappa_low=_rounded(plain[0]) if plain else None,
        kappa_high=_rounded(plain[1]) if plain else None,
        weighted_kappa=_rounded(cohen_kappa(labels, scores, weighted=True)),
        weighted_kappa_low=_rounded(weighted[0]) if weighted else None,
        weighted_kappa_high=_rounded(weighted[1]) if weighted else None,
        within_one_percent=None if within is None else round(100 * within, 6),
        confusion=matrix,
    )


def _not_graded_note(file: SampleFile) -> str:
    if file.grader is None and file.grader_declared:
        return "not graded: the [grader] table is invalid (see the validation problems)"
    if file.grader is None:
        return "no [grader]: validated only"
    return "not graded: the file has no valid sample"


async def _grade_file(
    file: SampleFile,
    settings: RunSettings,
    pricer: Pricer,
    limit: asyncio.Semaphore,
    on_sample: SampleCallback | None,
) -> tuple[CalibrationFileResult, int]:
    """The file's result and the tokens its grader sent over the network."""
    grader = file.grader
    if grader is None or not file.samples:
        return summarize(file, None, [], None), 0
    try:
        session = open_grader_session(
            file.source, grader, settings.mode, settings.provider, settings.base_url,
            settings.env, settings.session, shown_as=file.path,
        )
    except ProviderError as exc:  # e.g. an unknown provider: every sample is an error row
        rows = [_error_row(sample, exc.message) for sample in file.samples]
        return summarize(file, grader_info(grader, grader.provider or "?"), rows, None), 0
    grading = _FileGrading(session, pricer, settings.env)
    info = grader_info(grader, session.provider_name)
    so_far = summarize(file, info, [], None)
    notify = None if on_sample is None else partial(on_sample, so_far)
    rows = await run_then_close(session, file.samples, grading.grade, [limit], notify,
                                lambda sample: _error_row(sample, STOP.message()))
    cassette = None if session.transport is None else cassette_path_for(Path(file.path))
    shown = None if cassette is None else cassette.as_posix()
    return summarize(file, info, rows, shown), session.live_tokens


async def grade_sample_files(
    files: Sequence[SampleFile],
    settings: RunSettings,
    pricer: Pricer,
    limit: asyncio.Semaphore,
    on_sample: SampleCallback | None = None,
) -> Grading:
    """Grade every file that has a grader; files without one are listed, not graded."""
    graded = await asyncio.gather(
        *(_grade_file(file, settings, pricer, limit, on_sample) for file in files)
    )
    return Grading([result for result, _ in graded], sum(tokens for _, tokens in graded))


def calibration_problems(
    results: Sequence[CalibrationFileResult], min_agreement: float | None = None
) -> list[str]:
    """Why calibration fails: error rows, or agreement below the minimum.

    `min_agreement` (percent) overrides each grader's own `min_agreement`.
    """
    problems = []
    for result in results:
        if result.errors:
            problems.append(f"{result.path}: the grader could not score "
                            f"{counted(result.errors, 'sample')}")
        minimum = result.min_agreement if min_agreement is None else min_agreement
        agreement = result.agreement_percent
        if minimum is not None and agreement is not None and is_below(agreement, minimum):
            problems.append(
                f"{result.path}: agreement {percent_text(agreement)} is below the minimum "
                f"{percent_text(minimum)}"
            )
    return problems
