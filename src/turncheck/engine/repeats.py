"""Repeated samples of one case (an eval or a protocol case): how many to take, and
what they add up to. Written once for both kinds; only "how one sample runs" and the
per-kind sample model differ.

Each sample is an independent conversation with its own index; provider calls
made while it runs are keyed by that index in the cassette (`use_sample`), and
with a fixed `seed` sample i sends `seed + i` so samples differ. `repeat: auto`
takes samples in looks (`turncheck.stats.adaptive`); each sample records its look, and
an eval whose stopping was decided together with the other side of a comparison
(`turncheck.engine.pairing`) records that pairing, so the comparison knows which test
is valid for how it was sampled.

A case's status from its samples: only samples that passed or failed are evidence
about the model. With fewer usable samples than `usable_minimum` (half the samples
taken, at least one) the case is `error` when errors outnumber skips, else `skipped`
(a budget stopped it) — never `fail`. Otherwise it passes when at least `min_pass`
usable samples passed (default: every usable sample; capped at the usable samples),
else fails.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Hashable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

from turncheck.engine.interruption import STOP
from turncheck.formats.suite import DEFAULT_ALONE_MAX_REPEAT, DEFAULT_MAX_REPEAT, Metadata
from turncheck.providers.call_context import current_sample, use_sample
from turncheck.report.protocol import CaseResult, CaseSample
from turncheck.report.results import USABLE, RepeatSummary, SampleResult, Status
from turncheck.report.run import EvalResult
from turncheck.report.spend import spend_totals
from turncheck.stats.adaptive import UNUSABLE, more_samples
from turncheck.stats.rates import (
    pass_k_table,
    summarize_passes,
    turn_distribution,
    usable_minimum,
)

RepeatSetting = int | Literal["auto"]
Result = TypeVar("Result")


@dataclass(frozen=True)
class RepeatPlan:
    fixed: int | None
    """Samples to take; None for adaptive sampling."""
    max_repeat: int
    min_pass: int | None

    @property
    def repeated(self) -> bool:
        return self.fixed != 1


def plan_for(metadata: Metadata, override: RepeatSetting | None = None, alone: bool = True
             ) -> RepeatPlan:
    """The suite's repeat plan; `override` (the command line's) replaces its `repeat`;
    `alone`: no other side decides the looks with this one (its default `max_repeat`)."""
    repeat = override if override is not None else metadata.repeat
    max_repeat = metadata.max_repeat \
        or (DEFAULT_ALONE_MAX_REPEAT if alone else DEFAULT_MAX_REPEAT)
    if repeat == "auto":
        return RepeatPlan(None, max_repeat, metadata.min_pass)
    count = repeat or 1
    return RepeatPlan(count, count, metadata.min_pass)


def sample_seed(seed: int | None, index: int | None = None) -> int | None:
    """The seed sample `index` (default: the running one) sends: `seed + index`."""
    if seed is None:
        return None
    return seed + (current_sample() if index is None else index)


Outcome = int | None


def outcome_of(result: EvalResult | SampleResult) -> Outcome:
    return result.passed_on_turn if result.status is Status.PASS else None


def stopping_outcome(result: EvalResult | SampleResult) -> Hashable:
    """What `repeat: auto`'s stopping rules see of a sample: its outcome, or `UNUSABLE`
    when it errored or was skipped (no evidence about the model)."""
    return outcome_of(result) if result.status in USABLE else UNUSABLE


def case_outcome(result: CaseResult | CaseSample) -> Hashable:
    """What must agree across a protocol case's samples for `repeat: auto` to stop early:
    its status and its score."""
    score = result.aggregates.interactive_reasoning
    return result.status, None if score is None else round(score, 6)


class Stopping(Protocol):
    """Decides after each look how many more samples an adaptive case takes."""

    async def more(self, outcomes: Sequence[Hashable], max_repeat: int) -> int: ...


class AloneStopping:
    """One side decides on its own samples (no other side to decide with)."""

    async def more(self, outcomes: Sequence[Hashable], max_repeat: int) -> int:
        return more_samples(outcomes, max_repeat)


@dataclass(frozen=True)
class Sampled(Generic[Result]):
    results: list[Result]
    looks: list[int]
    """Each sample's look (0: the first)."""
    paired: str | None = None
    """The pairing token when every stopping decision was made with the other side."""


async def take_samples(plan: RepeatPlan, run_one: Callable[[int], Awaitable[Result]],
                       outcome: Callable[[Result], Hashable],
                       stopping: Stopping | None = None) -> Sampled[Result]:
    """Run the plan's samples (concurrently within a look), in index order."""

    async def one(index: int) -> Result:
        use_sample(index)  # this task's context only
        return await run_one(index)

    decide = stopping or AloneStopping()
    results: list[Result] = []
    looks: list[int] = []
    while True:
        wanted = (plan.fixed - len(results) if plan.fixed is not None
                  else await decide.more([outcome(r) for r in results], plan.max_repeat))
        if wanted <= 0:
            return Sampled(results, looks)
        start = len(results)
        looks += [max(looks, default=-1) + 1] * wanted
        results += await asyncio.gather(*(one(i) for i in range(start, start + wanted)))


async def run_samples(plan: RepeatPlan, limits: Sequence[asyncio.Semaphore],
                      run_one: Callable[[], Awaitable[Result]], interrupted: Callable[[], Result],
                      outcome: Callable[[Result], Hashable],
                      stopping: Stopping | None = None) -> Sampled[Result]:
    """The plan's samples, each holding every limit (in order) while it runs, so repeats
    share the run's concurrency fairly; once stopping, no new conversation starts. A
    `stopping` rule shared with the other side is waited on holding no limit."""

    async def sample(index: int) -> Result:
        async with AsyncExitStack() as held:
            for limit in limits:
                await held.enter_async_context(limit)
            if STOP.requested:
                return interrupted()
            return await run_one()

    return await take_samples(plan, sample, outcome, stopping)


class _Sampled(Protocol):
    @property
    def status(self) -> Status: ...


def status_of(samples: Sequence[_Sampled], min_pass: int | None) -> Status:
    usable = [s for s in samples if s.status in USABLE]
    if len(usable) < usable_minimum(len(samples)):
        errors = sum(s.status is Status.ERROR for s in samples)
        skipped = sum(s.status is Status.SKIPPED for s in samples)
        return Status.ERROR if errors and errors >= skipped else Status.SKIPPED
    needed = min(min_pass or len(usable), len(usable))
    return Status.PASS if sum(s.status is Status.PASS for s in usable) >= needed \
        else Status.FAIL


def summarize(samples: Sequence[_Sampled], plan: RepeatPlan,
              turns: Sequence[Outcome] | None = None) -> RepeatSummary:
    """k, n, the Wilson interval, pass^k and pass@k, flakiness and the adaptive figures;
    the turn-of-pass distribution from `turns` (evals only). Errored and skipped samples
    are not evidence about the model: n counts the usable ones, `unusable` the others."""
    usable = [i for i, s in enumerate(samples) if s.status in USABLE]
    rates = summarize_passes([samples[i].status is Status.PASS for i in usable])
    hat_k, at_k = pass_k_table(rates.passes, rates.samples)
    return RepeatSummary(
        passes=rates.passes, samples=rates.samples, unusable=len(samples) - len(usable),
        pass_rate=None if rates.rate is None else round(rates.rate, 6),
        pass_rate_low=round(rates.low, 6), pass_rate_high=round(rates.high, 6),
        pass_hat_n=rates.pass_all, pass_at_n=rates.pass_any, flaky=rates.flaky,
        pass_hat_k=hat_k, pass_at_k=at_k,
        turn_of_pass={} if turns is None else turn_distribution([turns[i] for i in usable]),
        min_pass=min(plan.min_pass or len(usable), len(usable)),
        adaptive=plan.fixed is None, max_repeat=plan.max_repeat,
        samples_saved=max(0, plan.max_repeat - len(samples)),
    )


# -- evals -------------------------------------------------------------------------------


def _sample(index: int, result: EvalResult, seed: int | None, look: int = 0) -> SampleResult:
    return SampleResult(
        index=index, seed=sample_seed(seed, index), look=look, status=result.status,
        passed_on_turn=result.passed_on_turn, failed_on_turn=result.failed_on_turn,
        error=result.error, usage=result.usage,
        cost_usd=result.cost_usd, judge_usage=result.judge_usage,
        judge_cost_usd=result.judge_cost_usd, turns=result.turns,
        simulator_usage=result.simulator_usage, simulator_cost_usd=result.simulator_cost_usd,
        conversation=result.conversation,
    )


def combine(results: Sequence[EvalResult], plan: RepeatPlan, seed: int | None,
            looks: Sequence[int] = (), paired: str | None = None) -> EvalResult:
    """One eval result from its samples (taken at `looks`, decided with the other side
    under the pairing token `paired`); a single unrepeated sample is returned as is."""
    if not plan.repeated and len(results) == 1:
        return results[0]
    looks = list(looks) or [0] * len(results)
    samples = [_sample(i, r, seed, look) for i, (r, look) in
               enumerate(zip(results, looks, strict=True))]
    status = status_of(samples, plan.min_pass)
    passing = sorted(s.passed_on_turn for s in samples
                     if s.status is Status.PASS and s.passed_on_turn is not None)
    return results[0].model_copy(update={
        "status": status,
        "passed_on_turn": statistics.median_low(passing)
        if passing and status is Status.PASS else None,
        "failed_on_turn": _failed_on(samples) if status is Status.FAIL else None,
        "error": next((s.error for s in samples if s.error), None),
        "reason": _reason(results, status),
        **spend_totals(samples),
        "repeats": summarize(samples, plan, [outcome_of(s) for s in samples]).model_copy(
            update={"paired": paired if plan.fixed is None else None}),
        "samples": samples,
    })


def _failed_on(samples: Sequence[SampleResult]) -> int | None:
    """Scripted turns: the median turn the failed samples failed on."""
    failed = sorted(s.failed_on_turn for s in samples
                    if s.status is Status.FAIL and s.failed_on_turn is not None)
    return statistics.median_low(failed) if failed else None


def _reason(results: Sequence[EvalResult], status: Status) -> str | None:
    """Why the eval has `status` when its samples say (a budget skip, an interruption)."""
    return next((r.reason for r in results if r.status is status and r.reason), None)


# -- protocol cases ----------------------------------------------------------------------


def _case_sample(index: int, result: CaseResult, seed: int | None) -> CaseSample:
    return CaseSample(
        index=index, seed=sample_seed(seed, index), status=result.status,
        score=result.aggregates.interactive_reasoning, error=result.error,
        reason=result.reason, aggregates=result.aggregates, usage=result.usage,
        cost_usd=result.cost_usd, judge_usage=result.judge_usage,
        judge_cost_usd=result.judge_cost_usd, turns=result.turns,
    )


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def combine_cases(results: Sequence[CaseResult], plan: RepeatPlan,
                  seed: int | None) -> CaseResult:
    """One protocol case result from its samples (a single unrepeated one as is): the
    status by the eval rule, each aggregate the mean over the samples that have it."""
    if not plan.repeated and len(results) == 1:
        return results[0]
    samples = [_case_sample(i, r, seed) for i, r in enumerate(results)]
    aggregates = results[0].aggregates.model_copy(update={
        name: _mean([getattr(s.aggregates, name) for s in samples])
        for name in type(results[0].aggregates).model_fields
    })
    return results[0].model_copy(update={
        "status": status_of(samples, plan.min_pass),
        "error": next((s.error for s in samples if s.error), None),
        "aggregates": aggregates,
        **spend_totals(samples),
        "repeats": summarize(samples, plan),
        "samples": samples,
    })
