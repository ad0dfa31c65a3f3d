"""Do the verdicts hold on real suites? False alarms, power, calls and failure modes.

    python benchmarks/verdicts.py [--prs 400] [--seed 2024] [--workers 2] [--quick]

Simulates many pull requests and runs each one through the library's own decision
code: every sample becomes an `EvalResult` as the runner makes it, the engine's
`combine` (engine/repeats.py) adds them up into the eval's status and repeat summary,
`repeat: auto` asks the library's stopping rule (stats/adaptive.py) for every look,
and `compare_reports` (compare/evidence.py: evidence, tests, multiplicity, tiers)
decides the verdicts. The check's outcome is `fail_reasons` (compare/policy.py) under
`fail-on: regression` and under the default gate. Nothing of the decision is
re-implemented here: the script only draws samples and counts.

A sample of an eval with T turns passes on turn t with chance c_t given that turns
1..t-1 did not pass (single-turn: c_1 = the pass rate; 3-turn: c = 1-(1-p)^(1/3) per
turn, so the eval passes with chance p). Draws are numpy uniforms, independent per
PR, eval, side, sample and turn; each scenario has its own stream, identical for
every sampling setting (common random numbers), so `max_repeat` 10 vs 40 compares
the method, not the noise. Run-level drift: each side of a PR (a run) draws one
Z ~ N(0, 1) and every turn chance moves to expit(logit(c) + sigma * Z).

Every rate is printed with its Wilson 95 % interval, next to its target from issue
22; the script exits 1 when a target is missed (the point estimate is on the wrong
side), so it can fail. `--quick` runs every cell at a tiny size (the smoke test).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import math
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from turncheck.compare.comparison import compare_reports  # noqa: E402
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, fail_reasons  # noqa: E402
from turncheck.compare.pool import pool_reports  # noqa: E402
from turncheck.engine.repeats import (  # noqa: E402
    RepeatPlan,
    combine,
    outcome_of,
    stopping_outcome,
)
from turncheck.report.pool import BasePool  # noqa: E402
from turncheck.report.results import Status  # noqa: E402
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult  # noqa: E402
from turncheck.report.spend import Usage  # noqa: E402
from turncheck.stats import adaptive  # noqa: E402
from turncheck.stats.rates import wilson_interval  # noqa: E402
from turncheck.stats.verdicts import Verdict  # noqa: E402
from turncheck.text.counts import counted  # noqa: E402

MIXTURE = (1.0,) * 8 + (0.99,) * 2 + (0.95,) * 3 + (0.9,) * 3 + (0.8,) * 2 + (0.7, 0.5)
"""The realistic 20-eval suite of issue 22."""
MAX_SAMPLES = 60
"""Length of every sample stream: the largest repeat / max_repeat measured."""
SEED_OFFSET = 1
HISTORY_RUNS = 5
"""Pooled-base cells: main's trusted runs of the base commit pooled into the base side
(each `repeat: 20`, each with its own run-level drift); the PR samples its head only."""
HISTORY_REPEAT = 20
"""The suites' `seed` (sample i sends SEED_OFFSET + i): recorded, never drawn from."""

Chances = tuple[float, ...]
"""Per-turn conditional pass chances of one eval on one side."""


# -- what a simulated PR looks like --------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One kind of PR: every eval's turn chances at base and at head."""

    name: str
    base: tuple[Chances, ...]
    head: tuple[Chances, ...]
    changed: int | None = None
    """Index of the eval whose change the detection rate counts (None: any regression)."""
    fault: str | None = None
    """`outage` (every head sample errors) or `budget` (every head sample skipped)."""
    drift: float = 0.0
    """Run-level drift sigma on the logit scale."""
    drift_per_eval: bool = False
    """Each eval of a run draws its own drift (else one drift is shared by a run's evals)."""
    sides_together: bool = False
    """Base and head samples are taken interleaved in one window (the action and `turncheck
    diff` run both sides at once): both sides share the run's drift."""

    @property
    def evals(self) -> int:
        return len(self.base)


def turn_chances(rate: float, turns: int) -> Chances:
    """Per-turn chances with which an eval of `turns` turns passes at `rate` overall."""
    if turns == 1:
        return (rate,)
    per_turn = 1.0 - (1.0 - rate) ** (1.0 / turns)
    return (per_turn,) * turns


def same(name: str, rates: Sequence[float], turns: int = 1, drift: float = 0.0,
         fault: str | None = None, per_eval: bool = False, together: bool = False
         ) -> Scenario:
    chances = tuple(turn_chances(r, turns) for r in rates)
    return Scenario(name, chances, chances, fault=fault, drift=drift, drift_per_eval=per_eval,
                    sides_together=together)


def changed(name: str, rates: Sequence[float], index: int, head_rate: float,
            drift: float = 0.0) -> Scenario:
    """Eval `index` moves to `head_rate` at head; `drift`: each eval of a run its own,
    base and head drawn in separate runs."""
    base = tuple(turn_chances(r, 1) for r in rates)
    head = tuple(turn_chances(head_rate, 1) if i == index else c for i, c in enumerate(base))
    return Scenario(name, base, head, changed=index, drift=drift, drift_per_eval=drift > 0)


def in_mixture(base_rate: float) -> int:
    return MIXTURE.index(base_rate)


# -- how it is sampled ---------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """`repeat: N` (fixed) or `repeat: auto` with `max_repeat`."""

    repeat: int | None
    max_repeat: int
    pooled: bool = False
    """The base side is `history_runs` runs of main pooled (`compare.pool`); only the
    head is sampled, alone (`repeat: auto` stops on the head's own samples)."""
    history_runs: int = HISTORY_RUNS
    history_repeat: int = HISTORY_REPEAT
    """Samples per eval of each stored run of main."""
    base_commit_runs: int | None = None
    """Stored runs of the base commit itself (pooled); the others are earlier commits'
    (drift only). None: all of them (the figures of issues 36 and before)."""
    separate: bool = False
    """`repeat: auto` on both sides in two separate runs (each stops on its own)."""
    apart: bool = False
    """A fixed repeat on both sides in two separate runs (two run ids), drift or not."""
    mode: str = "live"
    """The runs' mode; `replay` gives head the base's recorded answers."""
    per_history: int = 1
    """Pooled: PRs that share one drawn history of main (issue 45 item 4: the level for
    the PR in front of the user, main's stored runs held fixed)."""

    @property
    def label(self) -> str:
        plain = f"repeat {self.repeat}" if self.repeat else f"auto<={self.max_repeat}"
        if self.separate or self.apart:
            plain += " separate runs"
        if self.mode != "live":
            plain += f" {self.mode}"
        if not self.pooled:
            return plain
        runs = "" if self.history_runs == HISTORY_RUNS \
            else f" of {counted(self.history_runs, 'run')}"
        if self.base_commit_runs is not None:
            runs = f" of {counted(self.history_runs, 'run')} ({self.base_commit_runs} of " \
                "the base commit)"
        if self.history_repeat != HISTORY_REPEAT:
            runs += f" x {self.history_repeat}"
        return f"pooled base{runs}, head {plain}"

    @property
    def plan(self) -> RepeatPlan:
        return RepeatPlan(self.repeat, self.repeat or self.max_repeat, None)


FIXED_20 = Sampling(20, 20)
AUTO_20 = Sampling(None, 20)
AUTO_60 = Sampling(None, 60)
"""Both sides together, `repeat: auto` with `max_repeat: 60` (issue 36 item 3): steady
evals stop at 5 samples a side, evals that look worse go on to 60."""
AUTO_20_SEPARATE = Sampling(None, 20, separate=True)
"""`repeat: auto` in two separate runs, compared: each side stopped on its own samples."""
ONE_SAMPLE = tuple(Sampling(1, 1, mode=mode) for mode in ("live", "record", "replay"))
"""One sample per side, in each mode (replay: both sides replay the same answers)."""
POOLED_FIXED_20 = Sampling(20, 20, pooled=True)
POOLED_AUTO_30 = Sampling(None, 30, pooled=True)
"""Head only, `repeat: auto` up to 30: with the base reused, a PR can afford more head
samples than fixed 20 on both sides and still spend under half its calls."""
ONE_RUN_AUTO_30 = Sampling(None, 30, pooled=True, history_runs=1)
"""As POOLED_AUTO_30 with one stored run of main: no history to estimate drift from."""


def looks_of(base: Sequence[object], head: Sequence[object], sampling: Sampling
             ) -> tuple[list[int], list[int]]:
    """The sizes of the looks each side takes from its stream, by the library's stopping
    rule (one look of `repeat` for a fixed repeat).

    With both sides sampled together the library's joint design decides every look
    from both sides' samples (`joint_next`); `separate` runs stop each side on its own
    samples (`more_samples`), as two separate `turncheck run`s do."""
    if sampling.repeat is not None:
        return [sampling.repeat], [sampling.repeat]
    if sampling.pooled:
        return [], head_looks(head, sampling.max_repeat)
    if sampling.separate:
        return head_looks(base, sampling.max_repeat), head_looks(head, sampling.max_repeat)
    looks: tuple[list[int], list[int]] = ([], [])
    while True:
        taken = sum(looks[0])
        more = adaptive.joint_next(list(base[:taken]), list(head[:taken]),  # type: ignore[arg-type]
                                   sampling.max_repeat)
        if more <= 0:
            return looks
        looks[0].append(more)
        looks[1].append(more)


def head_looks(head: Sequence[object], max_repeat: int) -> list[int]:
    """The looks of a side sampled alone (`adaptive.more_samples`)."""
    looks: list[int] = []
    while (more := adaptive.more_samples(list(head[:sum(looks)]), max_repeat)) > 0:
        looks.append(more)
    return looks


# -- drawing samples -----------------------------------------------------------------


def logit_shift(chances: np.ndarray, shift: np.ndarray) -> np.ndarray:
    inner = (chances > 0) & (chances < 1)
    safe = np.clip(chances, 1e-12, 1 - 1e-12)
    moved = 1.0 / (1.0 + np.exp(-(np.log(safe / (1 - safe)) + shift)))
    return np.where(inner, moved, chances)


def draw_outcomes(chances: Sequence[Chances], prs: int, rng: np.random.Generator,
                  drift: float, per_eval: bool = False, shift: np.ndarray | None = None
                  ) -> np.ndarray:
    """Turn of pass (1..T) of every sample, 0 when it did not pass: shape
    (prs, evals, MAX_SAMPLES). `per_eval`: every eval of a run its own drift; `shift`:
    the runs' drifts, drawn by the caller (`run_shifts`)."""
    turns = max(len(c) for c in chances)
    table = np.zeros((len(chances), turns))
    for index, eval_chances in enumerate(chances):
        table[index, :len(eval_chances)] = eval_chances
    if shift is None:
        shift = run_shifts(rng, prs, len(chances), drift, per_eval)
    per_pr = logit_shift(np.broadcast_to(table[None, :, None, :],
                                         (prs, len(chances), 1, turns)), shift)
    passed = rng.random((prs, len(chances), MAX_SAMPLES, turns)) < per_pr
    first = np.argmax(passed, axis=-1) + 1
    outcomes: np.ndarray = np.where(passed.any(axis=-1), first, 0)
    return outcomes


def run_shifts(rng: np.random.Generator, prs: int, evals: int, drift: float,
               per_eval: bool) -> np.ndarray:
    """Each run's logit drift, broadcastable to (prs, evals, samples, turns)."""
    drawn = rng.standard_normal((prs, evals))[:, :, None, None] if per_eval \
        else rng.standard_normal(prs)[:, None, None, None]
    shifts: np.ndarray = drawn * drift
    return shifts


# -- one PR through the library ------------------------------------------------------

PRICES = PriceSource(library="genai-prices", version="bench", timestamp="2026-01-01T00:00:00Z")
NO_USAGE = Usage()


@functools.cache
def sample_result(name: str, status: Status, turn: int | None) -> EvalResult:
    """One sample as the runner returns it (no turns kept: the verdict never reads them).
    Shared between PRs: nothing downstream changes a result, it copies."""
    return EvalResult.model_construct(
        name=name, prompt=name, status=status, passed_on_turn=turn, error=None,
        usage=NO_USAGE, cost_usd=None, judge_usage=NO_USAGE, judge_cost_usd=None, turns=[],
        line=1, reason="budget" if status is Status.SKIPPED else None, repeats=None,
        samples=[])


def sample_of(name: str, outcome: int, fault: str | None) -> EvalResult:
    if fault == "outage":
        return sample_result(name, Status.ERROR, None)
    if fault == "budget":
        return sample_result(name, Status.SKIPPED, None)
    return sample_result(name, Status.PASS, outcome) if outcome else sample_result(
        name, Status.FAIL, None)


def in_look_order(stream: np.ndarray, looks: Sequence[int]) -> list[int]:
    """The stream's first sum(looks) outcomes, sorted within each look. Samples of one
    look are exchangeable (the stopping rule only sees whole looks), so this changes no
    figure; it lets equal looks share one cached `combine` and one cached test."""
    ordered: list[int] = []
    start = 0
    for size in looks:
        ordered += sorted(int(t) for t in stream[start:start + size])
        start += size
    return ordered


_COMBINED: dict[tuple[object, ...], EvalResult] = {}
PAIRED = "bench"
"""The pairing token of evals whose looks both sides decided together."""


def combined(name: str, outcomes: Sequence[int], fault: str | None, plan: RepeatPlan,
             looks: Sequence[int] = (), paired: str | None = None) -> EvalResult:
    """The engine's `combine` of these samples taken in `looks` (sizes; `repeat: auto`),
    as the engine records them (memoised: it is a pure function)."""
    key = (name, fault, tuple(outcomes), plan, tuple(looks), paired)
    found = _COMBINED.get(key)
    if found is None:
        indices = [look for look, size in enumerate(looks) for _ in range(size)] \
            if plan.fixed is None else []
        found = combine([sample_of(name, t, fault) for t in outcomes], plan, SEED_OFFSET,
                        indices, paired)
        if len(_COMBINED) < 200_000:
            _COMBINED[key] = found
    return found


def calls_of(outcomes: np.ndarray, turns: int, fault: str | None) -> int:
    """Provider calls: a pass on turn t took t, a failure every turn; an errored sample
    one (the failing request), a skipped one none."""
    if fault == "outage":
        return len(outcomes)
    if fault == "budget":
        return 0
    return int(np.where(outcomes > 0, outcomes, turns).sum())


def report_of(suite: list[EvalResult], commit: str | None = None, mode: str = "live",
              run_id: str | None = None) -> Report:
    results = SuiteResult(path="bench.eval.yaml", name="bench", model="m", provider="openai",
                          cassette=None, evals=suite)
    return Report(turncheck_version="bench", mode=mode, price_source=PRICES,
                  suites=[results], started_at="2026-01-01T00:00:00Z", duration_s=0.0,
                  commit=commit, run_id=run_id)


def run_ids(scenario: Scenario, sampling: Sampling) -> tuple[str, str]:
    """The run ids the two sides' reports carry (`Report.run_id`): one shared when both
    sides were sampled in one run (the action, `turncheck diff`), two when they were
    sampled apart (two `turncheck run`s compared): drift cells not `sides_together`, and
    `repeat: auto` in separate runs. Without drift the draws are the same either way:
    those cells are the action's, one run."""
    apart = sampling.separate or sampling.apart \
        or (scenario.drift > 0 and not scenario.sides_together)
    return ("base-run", "head-run") if apart else ("one-run", "one-run")


HISTORY_PLAN = RepeatPlan(HISTORY_REPEAT, HISTORY_REPEAT, None)


def pooled_base(scenario: Scenario, history: np.ndarray, sampling: Sampling
                ) -> tuple[Report, BasePool]:
    """The library's pooled base of main's runs; `history`: (history_runs, evals,
    MAX_SAMPLES) streams, each run's first `history_repeat` samples taken (one sample:
    an unrepeated run, as the live default makes it). With `base_commit_runs` only the
    first runs are of the base commit, the others of earlier commits."""
    runs = []
    repeat = sampling.history_repeat
    plan = RepeatPlan(repeat, repeat, None)
    for index, run in enumerate(history):
        if repeat == 1:
            suite = [sample_of(f"e{i}", int(run[i][0]), None) for i in range(scenario.evals)]
        else:
            suite = [combined(f"e{i}", sorted(int(t) for t in run[i][:repeat]), None, plan)
                     for i in range(scenario.evals)]
        own = sampling.base_commit_runs is None or index < sampling.base_commit_runs
        runs.append(report_of(suite, commit="base" if own else f"earlier-{index}",
                              run_id=f"main-{index}"))
    return pool_reports(runs, base_commit="base")


@dataclass
class PrOutcome:
    verdicts: list[Verdict]
    head_statuses: list[Status]
    regression_gate: bool
    default_gate: bool
    base_calls: int
    head_calls: int


def one_pr(scenario: Scenario, sampling: Sampling, base: np.ndarray, head: np.ndarray
           ) -> PrOutcome:
    """Sample, combine and compare one PR; `base`/`head`: (evals, MAX_SAMPLES) streams
    (`base`: (HISTORY_RUNS, evals, MAX_SAMPLES) main's runs when the base is pooled)."""
    suites: tuple[list[EvalResult], list[EvalResult]] = ([], [])
    calls = [0, 0]
    faults = (None, scenario.fault)
    for index in range(scenario.evals):
        name = f"e{index}"
        streams = (base[0][index] if sampling.pooled else base[index], head[index])
        seen = [[] if sampling.pooled and side == 0 else
                [(outcome_of if sampling.repeat is not None or sampling.pooled
                  or sampling.separate else stopping_outcome)(sample_of(name, int(t), fault))
                 for t in stream]
                for side, (stream, fault) in enumerate(zip(streams, faults, strict=True))]
        looks = looks_of(seen[0], seen[1], sampling)
        for side in (1,) if sampling.pooled else (0, 1):
            outcomes = in_look_order(streams[side], looks[side])
            joint = sampling.repeat is None and not sampling.pooled and not sampling.separate
            suites[side].append(combined(name, outcomes, faults[side], sampling.plan,
                                         looks[side], PAIRED if joint else None))
            turns = len((scenario.base, scenario.head)[side][index])
            calls[side] += calls_of(np.asarray(outcomes, dtype=int), turns, faults[side])
    if sampling.pooled:
        base_report, pool = pooled_base(scenario, base, sampling)
        comparison = compare_reports(base_report, report_of(suites[1], run_id="pr"),
                                     base_pool=pool)
    else:
        base_run, head_run = run_ids(scenario, sampling)
        comparison = compare_reports(report_of(suites[0], mode=sampling.mode, run_id=base_run),
                                     report_of(suites[1], mode=sampling.mode, run_id=head_run))
    return PrOutcome(
        verdicts=[e.verdict for s in comparison.suites for e in s.evals],
        head_statuses=[e.status for e in suites[1]],
        regression_gate=bool(fail_reasons(comparison, (FailOn.REGRESSION,))),
        default_gate=bool(fail_reasons(comparison, DEFAULT_FAIL_ON)),
        base_calls=calls[0], head_calls=calls[1],
    )


PURE_TESTS = ("turn_shift_test", "fisher_worse", "fisher_better", "stratified_shift_test",
              "two_stage_test")
"""The library's exact tests: pure functions of their arguments, called with the same
samples again and again across PRs, so memoised (wherever a module imported them)."""


def memoise_tests() -> None:
    for name in PURE_TESTS:
        original = next((getattr(module, name) for module_name, module in list(sys.modules.items())
                         if module_name.startswith("turncheck.stats") and hasattr(module, name)),
                        None)
        if original is None:
            continue
        wrapped = memoised(original)
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("turncheck") and getattr(module, name, None) is original:
                setattr(module, name, wrapped)


def memoised(function: Callable[..., object]) -> Callable[..., object]:
    cache: dict[str, object] = {}

    @functools.wraps(function)
    def call(*args: object, **kwargs: object) -> object:
        key = repr((args, kwargs))
        if key not in cache:
            if len(cache) > 500_000:
                cache.clear()
            cache[key] = function(*args, **kwargs)
        return cache[key]

    return call


# -- a cell: one scenario under one sampling, many PRs ------------------------------


@dataclass(frozen=True)
class Cell:
    scenario: Scenario
    sampling: Sampling
    prs: int
    seed: int

    @property
    def key(self) -> str:
        return f"{self.scenario.name} | {self.sampling.label}"


@dataclass
class Tally:
    prs: int = 0
    flagged: int = 0
    """PRs whose check fails under `fail-on: regression` (any eval or suite regression)."""
    default_gate: int = 0
    """PRs whose check fails under the default `fail-on`."""
    changed_regression: int = 0
    """PRs where the changed eval's verdict is `regression`."""
    false_regression: int = 0
    """PRs with a `regression` on an eval that did not change."""
    head_fail: int = 0
    """PRs where some head eval has status `fail`."""
    base_calls: int = 0
    head_calls: int = 0
    detected: list[bool] = field(default_factory=list)
    """Per PR: the figure the cell is about (for paired comparisons across cells)."""
    history_fails: list[int] = field(default_factory=list)
    """Per history of main (`Sampling.per_history` PRs each): PRs failing the default
    gate."""


def stream_seed(scenario: Scenario, seed: int, pooled: bool = False) -> int:
    """Same scenario, same stream, whatever the sampling (common random numbers); every
    scenario its own stream (a digest of its whole name), the pooled-base cells too."""
    digest = hashlib.sha256(f"{scenario.name}|{'pooled' if pooled else ''}|{seed}".encode())
    return int.from_bytes(digest.digest()[:8], "big")


def run_cell(cell: Cell) -> tuple[str, Tally]:
    memoise_tests()
    rng = np.random.default_rng(stream_seed(cell.scenario, cell.seed, cell.sampling.pooled))
    runs = cell.sampling.history_runs if cell.sampling.pooled else 1
    per_eval = cell.scenario.drift_per_eval
    shared = run_shifts(rng, cell.prs, cell.scenario.evals, cell.scenario.drift, per_eval) \
        if cell.scenario.sides_together and not cell.sampling.pooled else None
    base = draw_outcomes(cell.scenario.base, cell.prs * runs, rng, cell.scenario.drift,
                         per_eval, shared)
    if cell.sampling.pooled:
        base = base.reshape(cell.prs, runs, *base.shape[1:])
        # PRs against one history share its draws (main's runs held fixed).
        base = base[np.arange(cell.prs) // cell.sampling.per_history * cell.sampling.per_history]
    head = draw_outcomes(cell.scenario.head, cell.prs, rng, cell.scenario.drift, per_eval,
                         shared)
    if cell.sampling.mode == "replay":  # both sides replay the same recorded answers
        head = base.copy()
    tally = Tally()
    for pr in range(cell.prs):
        outcome = one_pr(cell.scenario, cell.sampling, base[pr], head[pr])
        add(tally, outcome, cell.scenario.changed)
        if pr % cell.sampling.per_history == 0:
            tally.history_fails.append(0)
        tally.history_fails[-1] += outcome.default_gate
    return cell.key, tally


def add(tally: Tally, outcome: PrOutcome, changed_index: int | None) -> None:
    tally.prs += 1
    tally.flagged += outcome.regression_gate
    tally.default_gate += outcome.default_gate
    hit = (outcome.verdicts[changed_index] is Verdict.REGRESSION
           if changed_index is not None else outcome.regression_gate)
    tally.changed_regression += hit
    tally.detected.append(hit)
    tally.false_regression += any(v is Verdict.REGRESSION for i, v in enumerate(outcome.verdicts)
                                  if i != changed_index)
    tally.head_fail += any(s is Status.FAIL for s in outcome.head_statuses)
    tally.base_calls += outcome.base_calls
    tally.head_calls += outcome.head_calls


# -- the plan: which cells, at which size --------------------------------------------


NULL_RATES_ONE = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
CHANGES = ((0.9, 0.5), (0.9, 0.7), (0.95, 0.8), (1.0, 0.8))
MONOTONE_CHANGES = ((0.95, 0.8), (0.9, 0.7))
MONOTONE_REPEATS = (10, 20, 40, 60)


def scenarios() -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}

    def put(s: Scenario) -> None:
        found[s.name] = s

    for rate in NULL_RATES_ONE:
        put(same(f"null 1 eval at {rate:g}", [rate]))
    put(same("null 20 mixture", MIXTURE))
    put(same("null 20 mixture, 3 turns", MIXTURE, turns=3))
    put(same("null 20 at 0.5", [0.5] * 20))
    put(same("null 100 (mixture x5)", MIXTURE * 5))
    put(same("null 100 mixture, 3 turns", MIXTURE * 5, turns=3))
    put(same("null 20 mixture, drift 0.25", MIXTURE, drift=0.25))
    put(same("null 20 at 0.9", [0.9] * 20))
    put(same("null 20 at 0.7", [0.7] * 20))
    for before, after in CHANGES:
        put(changed(f"{before:g}->{after:g} alone", [before], 0, after))
        put(changed(f"{before:g}->{after:g} in 20 mixture", MIXTURE, in_mixture(before), after))
    put(Scenario("diffuse 0.95->0.85 over 20", (turn_chances(0.95, 1),) * 20,
                 (turn_chances(0.85, 1),) * 20))
    shift_base, shift_head = (0.8, 1.0), (0.2, 1.0)
    put(Scenario("turn shift 1->2 alone", (shift_base,), (shift_head,), changed=0))
    put(Scenario("turn shift 1->2 in 20 mixture", (*[(r,) for r in MIXTURE[:-1]], shift_base),
                 (*[(r,) for r in MIXTURE[:-1]], shift_head), changed=19))
    put(same("outage at head, 20 mixture", MIXTURE, fault="outage"))
    put(same("budget stop at head, 20 mixture", MIXTURE, fault="budget"))
    put(same("outage at head, 1 eval at 1.0", [1.0], fault="outage"))
    put(same("budget stop at head, 1 eval at 1.0", [1.0], fault="budget"))
    for scenario in drift_scenarios():
        put(scenario)
    for scenario in live_scenarios():
        put(scenario)
    for scenario in margin_scenarios():
        put(scenario)
    for scenario in every_path_scenarios():
        put(scenario)
    for scenario in history_scenarios():
        put(scenario)
    return found


# -- issue 45 item 1: the live default path -------------------------------------------

LIVE_DRIFT = 0.5
NEVER_AND_06 = (0.0,) * 10 + (0.6,) * 10
"""Ten never-passing evals beside ten at 0.6 (issue 45's heavy-tailed suite)."""


def live_scenarios() -> list[Scenario]:
    """Identical PRs of low pass rates, never-passing evals and drift up to sigma = 0.5
    (shared by a run's evals, or each eval's own), for the live default path: one sample
    per side against main's stored runs (`LIVE_SAMPLINGS`). Named `live ...` so that the
    earlier sections' filters leave them to `live_default_path`."""
    found = [same(f"live null 20 at {rate:g}", [rate] * 20) for rate in (0.3, 0.4, 0.5)]
    found.append(same("live null 10 never + 10 at 0.6", NEVER_AND_06))
    for sigma in (0.25, LIVE_DRIFT):
        for per_eval in (False, True):
            kind = " per eval" if per_eval else " shared"
            found.append(same(f"live null 20 at 0.5, drift {sigma:g}{kind}", [0.5] * 20,
                              drift=sigma, per_eval=per_eval))
    for per_eval in (False, True):
        kind = " per eval" if per_eval else " shared"
        found.append(same(f"live null 10 never + 10 at 0.6, drift {LIVE_DRIFT:g}{kind}",
                          NEVER_AND_06, drift=LIVE_DRIFT, per_eval=per_eval))
    return found


LIVE_SAMPLINGS = tuple(Sampling(1, 1, pooled=True, history_runs=runs, history_repeat=1,
                                base_commit_runs=1) for runs in (1, 2, 5))
"""The live default: one sample per side, the base from main's stored runs of one sample
per eval: the base commit's run, plus earlier commits' runs for the drift (1, 2, 5 runs
in all)."""


# -- issue 45 item 2: drift estimated with a margin ------------------------------------


def margin_scenarios() -> list[Scenario]:
    """Identical PRs under drift sigma = 0.5, shared by a run's evals or each eval's own,
    measured against pooled bases of 2 and 5 stored runs and between two separate runs
    (`MARGIN_SAMPLINGS`). Named `margin ...` (`drift_margin` prints them)."""
    found = []
    for name, rates in (("20 at 0.5", [0.5] * 20), ("20 mixture", MIXTURE),
                        ("10 never + 10 at 0.6", NEVER_AND_06)):
        for per_eval in (False, True):
            kind = "per eval" if per_eval else "shared"
            found.append(same(f"margin null {name}, drift {LIVE_DRIFT:g} {kind}", rates,
                              drift=LIVE_DRIFT, per_eval=per_eval))
    return found


MARGIN_SAMPLINGS = (
    FIXED_20,  # drift, sides apart: two separately run reports
    *(Sampling(20, 20, pooled=True, history_runs=runs) for runs in (2, 5)),
    *(Sampling(None, 30, pooled=True, history_runs=runs) for runs in (2, 5)),
    *(Sampling(20, 20, pooled=True, history_runs=runs, base_commit_runs=1)
      for runs in (2, 5)),
)
"""Two separate runs (fixed 20 a side); pooled bases of 2 and 5 runs of the base commit
(head fixed 20, or `auto` up to 30); the usual set-up: one run of the base commit plus
earlier commits' runs (2 and 5 in all), head fixed 20."""


def drift_margin(results: Results, printed: Printed) -> None:
    """Issue 45 item 2: false regressions with drift sigma = 0.5."""
    print("\nIssue 45 item 2: false regressions (`fail-on: regression`) with drift sigma = "
          f"{LIVE_DRIFT:g}, shared or per eval: two separate runs, pooled bases of 2 and 5 "
          "runs; ± Monte Carlo standard error")
    for key, tally in results.items():
        if key.startswith("margin null"):
            printed.row(key, f"{rate_text(tally.flagged, tally.prs)} "
                        f"± {standard_error(tally.flagged, tally.prs):.1%}", "<= 5%",
                        at_most(tally.flagged, tally.prs, 0.05))


# -- issue 45 items 3 and 5: 3-turn shifts on every path; the usual set-up's power ----

LATE_BASE, LATE_HEAD = (0.9, 0.9, 1.0), (0.05, 0.05, 1.0)
"""A 3-turn eval that passes every sample, nearly always on turn 1 at base and on turn 3
at head."""
MIXTURE_3 = tuple(turn_chances(r, 3) for r in MIXTURE[:-1])


def every_path_scenarios() -> list[Scenario]:
    """The 1 -> 3 turn shift inside the 3-turn mixture, its null twin under drift 0.5
    (shared and per eval), and the usual set-up's detection cells (`EVERY_PATH`)."""
    return [
        Scenario("path turn shift 1->3 in 20 mixture, 3 turns", (*MIXTURE_3, LATE_BASE),
                 (*MIXTURE_3, LATE_HEAD), changed=19),
        Scenario("path null 20 mixture, 3 turns, drift 0.5 shared", (*MIXTURE_3, LATE_BASE),
                 (*MIXTURE_3, LATE_BASE), drift=LIVE_DRIFT),
        Scenario("path null 20 mixture, 3 turns, drift 0.5 per eval",
                 (*MIXTURE_3, LATE_BASE), (*MIXTURE_3, LATE_BASE), drift=LIVE_DRIFT,
                 drift_per_eval=True),
        changed("path 0.9->0.5 in 20 mixture", MIXTURE, in_mixture(0.9), 0.5),
        changed("path 1->0.8 in 20 mixture", MIXTURE, in_mixture(1.0), 0.8),
        Scenario("path diffuse 0.95->0.85 over 20", (turn_chances(0.95, 1),) * 20,
                 (turn_chances(0.85, 1),) * 20),
    ]


USUAL_5 = Sampling(20, 20, pooled=True, history_runs=5, base_commit_runs=1)
USUAL_5_AUTO = Sampling(None, 30, pooled=True, history_runs=5, base_commit_runs=1)
EVERY_PATH = (FIXED_20, Sampling(20, 20, apart=True), AUTO_20, POOLED_FIXED_20,
              POOLED_AUTO_30, USUAL_5, USUAL_5_AUTO)
"""Both sides together (fixed 20, `auto`), two separate runs (fixed 20), a pooled base of
5 runs of the base commit (head fixed 20 or `auto` up to 30) and the usual set-up: one
run of the base commit plus 4 earlier commits' runs."""


def every_path(results: Results, printed: Printed) -> None:
    """Issue 45 items 3 and 5: what each path catches, misses printed as well as hits."""
    print("\nIssue 45 items 3 and 5: the 1 -> 3 turn shift on every path, its null twin "
          f"under drift {LIVE_DRIFT:g}, and the usual set-up (1 run of the base commit + 4 "
          "earlier) beside 5 runs of the base commit")
    for key, tally in results.items():
        if not key.startswith("path "):
            continue
        if key.startswith("path null"):
            printed.row(key, rate_text(tally.flagged, tally.prs), "<= 5%",
                        at_most(tally.flagged, tally.prs, 0.05))
            continue
        diffuse = "diffuse" in key
        hits = tally.flagged if diffuse else tally.changed_regression
        printed.row(f"{key}: {'PR flagged' if diffuse else 'caught'}",
                    rate_text(hits, tally.prs), "info")
        printed.row("  ... missed", rate_text(tally.prs - hits, tally.prs), "info")
        if not diffuse:
            printed.row("  ... PRs with a regression on an unchanged eval",
                        rate_text(tally.false_regression, tally.prs), "<= 5%",
                        at_most(tally.false_regression, tally.prs, 0.05))


# -- issue 45 item 4: the level for the PR in front of the user ----------------------

HISTORY_PRS = 50
"""Identical PRs tested against each drawn history of main (its stored runs held fixed)."""
HISTORY_SHARE = 0.10
"""A history is "bad" when more than this share of identical PRs fail against it; the
goal: no more than 5 % of histories are bad."""


def history_scenarios() -> list[Scenario]:
    """Identical PRs, many against each history of main (`HISTORY_SAMPLINGS`). Named
    `history ...` (`per_history` prints them)."""
    return [same("history null 20 at 0.5", [0.5] * 20),
            same("history null 20 at 0.5, drift 0.5 shared", [0.5] * 20, drift=LIVE_DRIFT),
            same("history null 20 mixture, drift 0.5 shared", MIXTURE, drift=LIVE_DRIFT)]


HISTORY_SAMPLINGS = {
    "history null 20 at 0.5": [replace(s, per_history=HISTORY_PRS) for s in
                               (LIVE_SAMPLINGS[0], LIVE_SAMPLINGS[2])],
    "history null 20 at 0.5, drift 0.5 shared": [
        replace(LIVE_SAMPLINGS[2], per_history=HISTORY_PRS),
        Sampling(20, 20, pooled=True, per_history=HISTORY_PRS)],
    "history null 20 mixture, drift 0.5 shared": [
        Sampling(None, 30, pooled=True, per_history=HISTORY_PRS),
        replace(USUAL_5, per_history=HISTORY_PRS)],
}
"""The live default (one sample per eval, 1 and 5 stored runs), a pooled base of 5 runs of
the base commit (head fixed 20, or `auto` up to 30) and the usual set-up (1 + 4 runs)."""


def per_history(results: Results, printed: Printed) -> None:
    """Issue 45 item 4: how far one history of main pushes identical PRs' false fails."""
    print(f"\nIssue 45 item 4: identical PRs, {HISTORY_PRS} against each history of main "
          f"(its stored runs held fixed): the default gate's false fails per history; the "
          f"goal: no more than 5 % of histories fail more than {HISTORY_SHARE:.0%} of PRs "
          f"(a history's rate is read from {HISTORY_PRS} PRs, so the share errs upwards)")
    for key, tally in results.items():
        if not key.startswith("history ") or not tally.history_fails:
            continue
        rates = np.asarray(tally.history_fails) / (tally.prs / len(tally.history_fails))
        bad = int((rates > HISTORY_SHARE + 1e-12).sum())
        printed.row(key, rate_text(tally.default_gate, tally.prs), "info")
        printed.row(f"  ... histories failing > {HISTORY_SHARE:.0%} of PRs",
                    rate_text(bad, len(rates)), "<= 5%", at_most(bad, len(rates), 0.05))
        printed.row("  ... median / 95th percentile / worst history",
                    f"{np.median(rates):.0%} / {np.quantile(rates, 0.95):.0%} / "
                    f"{rates.max():.0%}", "info")


def live_default_path(results: Results, printed: Printed) -> None:
    """Issue 45 item 1: the default gate on identical PRs of the live default path."""
    print("\nIssue 45 item 1: the live default path (one sample per side, the base from "
          "main's stored runs): the default gate on identical PRs; ± Monte Carlo standard "
          "error")
    for key, tally in results.items():
        if key.startswith("live null"):
            printed.row(key, f"{rate_text(tally.default_gate, tally.prs)} "
                        f"± {standard_error(tally.default_gate, tally.prs):.1%}", "<= 5%",
                        at_most(tally.default_gate, tally.prs, 0.05))


# -- issue 36 items 1, 2: the pooled path's full family, and drift ---------------------

DRIFT = 0.25
MIXTURE_50 = MIXTURE * 2 + MIXTURE[:10]


def drift_scenarios() -> list[Scenario]:
    """Identical base and head under run-level drift sigma = 0.25 (each eval its own, or
    one shared by a run's evals: "null 20 mixture, drift 0.25" above), at 20, 50 and 100
    evals."""
    return [same(f"null 20 mixture, drift {DRIFT:g} per eval", MIXTURE, drift=DRIFT,
                 per_eval=True),
            same(f"null 50 mixture, drift {DRIFT:g} per eval", MIXTURE_50, drift=DRIFT,
                 per_eval=True),
            same(f"null 100 mixture, drift {DRIFT:g} per eval", MIXTURE * 5, drift=DRIFT,
                 per_eval=True),
            same(f"null 100 mixture, drift {DRIFT:g}", MIXTURE * 5, drift=DRIFT),
            same(f"null 20 mixture, drift {DRIFT:g} per eval, sides together", MIXTURE,
                 drift=DRIFT, per_eval=True, together=True),
            same(f"null 20 mixture, drift {DRIFT:g}, sides together", MIXTURE, drift=DRIFT,
                 together=True),
            same(f"null 100 mixture, drift {DRIFT:g} per eval, sides together",
                 MIXTURE * 5, drift=DRIFT, per_eval=True, together=True),
            *apart_changes()]


def apart_changes() -> list[Scenario]:
    """What widening the tests of separately run reports by the drift costs: changes
    sampled in two runs apart, drift sigma = 0.25 per eval."""
    return [changed(f"{before:g}->{after:g} in 20 mixture, drift {DRIFT:g} per eval", MIXTURE,
                    in_mixture(before), after, drift=DRIFT)
            for before, after in ((0.9, 0.5), (1.0, 0.8))] + [
        Scenario(f"diffuse 0.95->0.85 over 20, drift {DRIFT:g} per eval",
                 (turn_chances(0.95, 1),) * 20, (turn_chances(0.85, 1),) * 20, drift=DRIFT,
                 drift_per_eval=True)]


DRIFT_POOLED_CELLS: dict[str, list[Sampling]] = {
    "null 20 mixture": [ONE_RUN_AUTO_30],
    f"null 20 mixture, drift {DRIFT:g}": [ONE_RUN_AUTO_30],
    f"null 20 mixture, drift {DRIFT:g} per eval": [POOLED_AUTO_30, ONE_RUN_AUTO_30],
    f"null 50 mixture, drift {DRIFT:g} per eval": [POOLED_AUTO_30, ONE_RUN_AUTO_30],
    f"null 100 mixture, drift {DRIFT:g} per eval": [POOLED_AUTO_30, ONE_RUN_AUTO_30],
    f"null 100 mixture, drift {DRIFT:g}": [POOLED_AUTO_30],
    "diffuse 0.95->0.85 over 20": [POOLED_AUTO_30, ONE_RUN_AUTO_30],
    "1->0.8 in 20 mixture": [ONE_RUN_AUTO_30],
}
"""Pooled-base cells of issue 36 (5 stored runs of main, or 1), added to the scenarios'
other samplings; they run at the cell's full size."""


def standard_error(count: int, total: int) -> float:
    rate = count / total
    return math.sqrt(rate * (1 - rate) / total)


def drift_and_pooled(results: Results, printed: Printed) -> None:
    """Issue 36's targets: false regressions <= 5 % with and without drift, pooled and
    both sides sampled; the diffuse drop >= 95 % on both paths."""
    print("\nIssue 36: false regressions (`fail-on: regression`) under run-level drift "
          f"sigma = {DRIFT:g}, and on the pooled path; ± Monte Carlo standard error")
    for key, tally in results.items():
        if key.startswith("null") and ("drift" in key or "of 1 run" in key):
            printed.row(key, f"{rate_text(tally.flagged, tally.prs)} "
                        f"± {standard_error(tally.flagged, tally.prs):.1%}", "<= 5%",
                        at_most(tally.flagged, tally.prs, 0.05))
    for key, tally in results.items():
        if key.startswith("diffuse") and "drift" in key:  # two runs apart: the cost
            printed.row(f"{key}: PR flagged", f"{rate_text(tally.flagged, tally.prs)} "
                        f"± {standard_error(tally.flagged, tally.prs):.1%}", "info")
    for key, tally in results.items():
        if key.startswith("diffuse") and "pooled" in key:
            one_run = "of 1 run" in key  # drift from two runs: confounded, shown
            printed.row(f"{key}: PR flagged", f"{rate_text(tally.flagged, tally.prs)} "
                        f"± {standard_error(tally.flagged, tally.prs):.1%}",
                        "info" if one_run else ">= 95%",
                        None if one_run else at_least(tally.flagged, tally.prs, 0.95))
    key = f"1->0.8 in 20 mixture | {ONE_RUN_AUTO_30.label}"
    if key in results:
        tally = results[key]
        printed.row(key, rate_text(tally.changed_regression, tally.prs), "info")
        printed.row("  ... PRs with a regression on an unchanged eval",
                    rate_text(tally.false_regression, tally.prs), "info")


def size_for(scenario: Scenario, prs: int) -> int:
    """PRs per cell: fewer for 100-eval suites (each PR is 100 comparisons)."""
    if scenario.evals >= 100:
        return max(2, prs // 4)
    if scenario.fault is not None:
        return max(2, prs // 4)
    return prs


HALF_SIZE = (f"null 50 mixture, drift {DRIFT:g} per eval",
             f"diffuse 0.95->0.85 over 20, drift {DRIFT:g} per eval",
             f"diffuse 0.95->0.85 over 20 | {ONE_RUN_AUTO_30.label}")
"""Scenarios (or one cell, by its key) run at half size, for CPU: each 50-eval PR costs
2.5 times a 20-eval one. The 50-eval drift cells' false regressions measured 1.5-2.8 %
at 400 PRs against a 5 % target: at 200 PRs a true 2.8 % shows above 5 % in about 3 %
of runs (binomial), and the 20- and 100-eval cells beside them bracket them. The diffuse drop
under drift with the sides apart, and against a pooled base of one run, are
information (no target): 200 PRs put a rate near 20 % within about ± 3 %."""


POOLED_SCENARIOS = (
    "null 1 eval at 0.9", "null 20 mixture", "null 20 mixture, 3 turns", "null 20 at 0.5",
    "null 20 mixture, drift 0.25", "0.9->0.5 in 20 mixture", "0.9->0.7 in 20 mixture",
    "0.95->0.8 in 20 mixture", "1->0.8 in 20 mixture", "turn shift 1->2 in 20 mixture",
    "outage at head, 20 mixture", "budget stop at head, 20 mixture",
)
"""Scenarios also measured with a pooled base (main's runs reused, head-only spend)."""
POOLED_FIXED_SCENARIOS = ("null 20 mixture", "null 20 mixture, drift 0.25",
                          "0.9->0.5 in 20 mixture")
POOLED_FULL_SIZE = ("null 20 mixture", "null 20 mixture, drift 0.25",
                    "0.9->0.5 in 20 mixture", "1->0.8 in 20 mixture")
"""Their pooled `auto` cells run at full size; the other pooled cells at half (CPU: each
PR pools 5 reports)."""
DOUBLE_SIZE = ("null 20 mixture, 3 turns",)
"""Run at twice the size when both sides are sampled: 3-turn tests have many attainable
p-values, so the exact step-down spends nearly all of alpha there (its exact conditional
false-alarm chance averages 4.6-4.9 %, docs/statistics.md) and 400 PRs cannot tell that
from 5 %."""


AUTO_60_SCENARIOS = (
    "null 20 mixture", "null 20 mixture, 3 turns", "null 20 at 0.5", "null 100 (mixture x5)",
    "0.9->0.5 in 20 mixture", "1->0.8 in 20 mixture", "diffuse 0.95->0.85 over 20",
    "turn shift 1->2 in 20 mixture", "outage at head, 20 mixture",
    "budget stop at head, 20 mixture",
)
"""Scenarios also measured with both sides sampled together by `repeat: auto`,
`max_repeat: 60` (issue 36 item 3)."""
ONE_SAMPLE_SCENARIOS = ("null 20 mixture", "null 20 at 0.9", "null 20 at 0.7",
                        "null 20 mixture, 3 turns")
"""Flaky suites run with one sample per side, in every mode (issue 36 item 4)."""
SEPARATE_SCENARIOS = ("0.9->0.5 alone", "null 20 mixture")
"""Two `repeat: auto` runs made separately, then compared (first looks only)."""


def samplings_of(scenario: Scenario) -> list[Sampling]:
    """The samplings a scenario is measured under (besides the pooled ones)."""
    found = [FIXED_20, AUTO_20]
    if scenario.name in AUTO_60_SCENARIOS:
        found.append(AUTO_60)
    if scenario.name in ONE_SAMPLE_SCENARIOS:
        found += ONE_SAMPLE
    if scenario.name in SEPARATE_SCENARIOS:
        found.append(AUTO_20_SEPARATE)
    return found


def cells(prs: int, seed: int, only: str | Sequence[str] | None = None,
          smoke: bool = False) -> list[Cell]:
    """Every cell at its size for `prs` PRs; `smoke`: one PR each (the smoke test's run);
    `only`: the cells whose name contains (one of) these texts."""
    wanted = [only] if isinstance(only, str) else only
    planned = []
    for scenario in scenarios().values():
        samplings = samplings_of(scenario)
        if scenario.name in POOLED_SCENARIOS:
            samplings.append(POOLED_AUTO_30)
        if scenario.name in POOLED_FIXED_SCENARIOS:
            samplings.append(POOLED_FIXED_20)
        if scenario.changed is not None and scenario.evals == 1 and "turn" not in scenario.name:
            before_after = scenario.name.split(" ")[0]
            if any(before_after == f"{b:g}->{a:g}" for b, a in MONOTONE_CHANGES):
                samplings = [*(Sampling(n, n) for n in MONOTONE_REPEATS),
                             *(Sampling(None, n) for n in MONOTONE_REPEATS)]
        samplings += DRIFT_POOLED_CELLS.get(scenario.name, [])
        if scenario.name.startswith("live "):
            samplings = list(LIVE_SAMPLINGS)
        if scenario.name.startswith("margin "):
            samplings = list(MARGIN_SAMPLINGS)
        if scenario.name.startswith("path "):
            samplings = list(EVERY_PATH)
        if scenario.name.startswith("history "):
            samplings = list(HISTORY_SAMPLINGS[scenario.name])
        for sampling in samplings:
            size = size_for(scenario, prs)
            if scenario.name in DOUBLE_SIZE and not sampling.pooled:
                size *= 2
            if scenario.name.startswith("history "):
                size = max(1, prs // 10) * sampling.per_history
            if sampling.pooled and not scenario.name.startswith(
                    ("live ", "margin ", "path ", "history ")) \
                    and (scenario.name not in POOLED_FULL_SIZE
                                    or sampling.repeat is not None) \
                    and sampling not in DRIFT_POOLED_CELLS.get(scenario.name, []):
                size = max(2, size // 2)
            if scenario.name in HALF_SIZE \
                    or f"{scenario.name} | {sampling.label}" in HALF_SIZE:
                size = max(2, size // 2)
            cell = Cell(scenario, sampling, 1 if smoke else size, seed)
            if not wanted or any(text in cell.key for text in wanted):
                planned.append(cell)
    return planned


# -- what is printed ----------------------------------------------------------------


@dataclass
class Printed:
    missed: list[str] = field(default_factory=list)

    def row(self, label: str, value: str, target: str = "", ok: bool | None = None) -> None:
        mark = "" if ok is None else ("PASS" if ok else "MISS")
        if ok is False:
            self.missed.append(label)
        print(f"  {label:<50} {value:>24}  {target:<12} {mark}")


def rate_text(count: int, total: int) -> str:
    """count/total as a percentage with its Wilson 95 % interval."""
    low, high = wilson_interval(count, total)
    return f"{count / total:6.1%} [{low:5.1%}, {high:5.1%}]"


def at_most(count: int, total: int, target: float) -> bool:
    return count / total <= target + 1e-12


def at_least(count: int, total: int, target: float) -> bool:
    return count / total >= target - 1e-12


Results = dict[str, Tally]


def false_alarms(results: Results, printed: Printed) -> None:
    print("\nFamily-wise false alarms: identical base and head, PRs failing under "
          "`fail-on: regression`")
    for key, tally in results.items():
        if not key.startswith("null") or "drift" in key or "of 1 run" in key:
            continue  # drift_and_pooled
        printed.row(key, rate_text(tally.flagged, tally.prs), "<= 5%",
                    at_most(tally.flagged, tally.prs, 0.05))
    print("\nThe default gate (`fail-on: invalid,error,regression,broken`) on the same "
          "identical PRs: every mode, every sample count (issue 36 item 4: <= 5%)")
    for key, tally in results.items():
        if not key.startswith("null"):
            continue
        info = "drift" in key or "pooled" in key
        printed.row(key, rate_text(tally.default_gate, tally.prs), "info" if info else "<= 5%",
                    None if info else at_most(tally.default_gate, tally.prs, 0.05))


def detection(results: Results, printed: Printed) -> None:
    print("\nDetection: the changed eval's verdict is `regression`")
    targets = {f"0.9->0.5 in 20 mixture | {POOLED_AUTO_30.label}": 0.80,
               f"1->0.8 in 20 mixture | {POOLED_AUTO_30.label}": 0.50,
               f"0.9->0.5 in 20 mixture | {AUTO_60.label}": 0.80,
               f"1->0.8 in 20 mixture | {AUTO_60.label}": 0.50}
    for key, tally in results.items():
        if tally.prs == 0 or not any(key.startswith(f"{b:g}->{a:g}") or key.startswith("turn")
                                     for b, a in CHANGES):
            continue
        wanted = targets.get(key)
        printed.row(key, rate_text(tally.changed_regression, tally.prs),
                    "info" if wanted is None else f">= {wanted:.0%}",
                    None if wanted is None else at_least(tally.changed_regression, tally.prs,
                                                         wanted))
        if "mixture" in key:
            printed.row("  ... PRs with a regression on an unchanged eval",
                        rate_text(tally.false_regression, tally.prs), "<= 5%",
                        at_most(tally.false_regression, tally.prs, 0.05))
    key = "diffuse 0.95->0.85 over 20"
    for sampling in (FIXED_20, AUTO_20, AUTO_60):
        tally = results.get(f"{key} | {sampling.label}")
        if tally is None:
            continue
        # Issue 36's target is per path: both sides sampled (here with a fixed repeat)
        # and the pooled base (`drift_and_pooled`). With `auto` on both sides it is the
        # price of the calls target: shown, with the trade-off in docs/statistics.md.
        adaptive = sampling.repeat is None
        printed.row(f"{key} | {sampling.label}: PR flagged",
                    rate_text(tally.flagged, tally.prs),
                    "info (calls)" if adaptive else ">= 95%",
                    None if adaptive else at_least(tally.flagged, tally.prs, 0.95))


def faults(results: Results, printed: Printed) -> None:
    print("\nOutage (every head sample errors) and budget stop (every head sample skipped)")
    for key, tally in results.items():
        if not key.startswith(("outage", "budget")):
            continue
        printed.row(f"{key}: regression", rate_text(tally.flagged, tally.prs), "0%",
                    tally.flagged == 0)
        printed.row(f"{key}: head status fail", rate_text(tally.head_fail, tally.prs), "0%",
                    tally.head_fail == 0)
        printed.row(f"{key}: default gate trips", rate_text(tally.default_gate, tally.prs),
                    "info")


def exact_drop_p(detected_before: Sequence[bool], detected_after: Sequence[bool]) -> float:
    """One-sided exact McNemar p-value for "power fell": among the PRs detected by exactly
    one setting (same PRs, common random numbers), how unlikely that many were lost."""
    lost = sum(b and not a for b, a in zip(detected_before, detected_after, strict=True))
    gained = sum(a and not b for b, a in zip(detected_before, detected_after, strict=True))
    discordant = lost + gained
    if discordant == 0 or lost <= gained:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(lost, discordant + 1))
    return float(tail / 2**discordant)


MONOTONE_LEVEL = 0.01


def monotone(results: Results, printed: Printed) -> None:
    print(f"\nPower as max_repeat (repeat) grows: a step down is a MISS when its exact "
          f"paired p <= {MONOTONE_LEVEL:g}")
    for before, after in MONOTONE_CHANGES:
        for auto in (False, True):
            steps = [Sampling(None if auto else n, n) for n in MONOTONE_REPEATS]
            found = [results.get(f"{before:g}->{after:g} alone | {s.label}") for s in steps]
            tallies = [t for t in found if t is not None]
            if len(tallies) < len(steps):
                continue
            figures = " ".join(f"{t.changed_regression / t.prs:.0%}" for t in tallies)
            worst = min(exact_drop_p(a.detected, b.detected)
                        for a, b in itertools.pairwise(tallies))
            label = f"{before:g}->{after:g} alone, {'auto' if auto else 'fixed'} " \
                    f"{'/'.join(map(str, MONOTONE_REPEATS))}"
            printed.row(label, figures, "monotone", worst > MONOTONE_LEVEL)


CALLS_TARGET = f"0.9->0.5 in 20 mixture | {AUTO_60.label}"
"""The cell whose calls the target "<= 50 % of fixed 20 on both sides" is about."""


def calls(results: Results, printed: Printed) -> None:
    print("\nProvider calls per PR as a share of fixed repeat 20 on both sides, both sides "
          "counted (a pooled base: the head's only, main's reused runs not counted)")
    for key, tally in results.items():
        scenario, _, sampling = key.partition(" | ")
        fixed = results.get(f"{scenario} | {FIXED_20.label}")
        if sampling in (FIXED_20.label,) or fixed is None or tally.prs == 0 \
                or fixed.base_calls + fixed.head_calls == 0 or "alone" in scenario:
            continue
        full = (fixed.base_calls + fixed.head_calls) / fixed.prs
        spent = (tally.base_calls + tally.head_calls) / tally.prs
        target = key == CALLS_TARGET
        label = f"{key} (head only)" if "pooled" in key else key
        printed.row(label, f"{spent:7.1f} ({spent / full:4.0%})",
                    "<= 50%" if target else "info", spent / full <= 0.5 if target else None)


LEFT_OUT = (
    "3-turn evals are measured with identical base and head (false alarms, calls); the "
    "changed-eval cells are single-turn, the turn-of-pass shift is the multi-turn change.",
    f"drift sigma {DRIFT:g} is measured on 20-, 50- and 100-eval mixtures; 'sides together' "
    "cells share each run's drift between base and head (the action and `diff` interleave "
    "both sides' samples), the others draw the base run's and the head run's apart (two "
    "separate `turncheck run`s compared).",
    "pooled-base cells draw a fresh history per PR (as if every PR had its own base "
    "commit); PRs sharing one base share its history, and so their verdicts' errors.",
    "`repeat: auto` with max_repeat 60 is measured on the cells its targets are about "
    "(and the 20- and 100-eval null mixtures); its 3-turn 100-eval and smaller-drop "
    "cells are left out for CPU time.",
    "one sample per side in record mode draws fresh answers like live (a recording is "
    "one live answer); replay gives both sides the same recorded answers.",
    "with one stored run of main the drift comes from the base and head runs and is taken "
    "as shared, so a diffuse drop cannot be told from drift: that cell is shown, and its "
    "target applies with 5 stored runs.",
    "the fixed-vs-auto monotonicity sweep (repeat 10..60) runs on the single-eval changes "
    "0.95->0.8 and 0.9->0.7 only (the gate on observed effect bites there).",
    "issue 45's 'usual set-up' draws the earlier commits' runs from the same rates as the "
    "base commit's (no change between those commits): they only inform the drift.",
    "issue 45 item 4's `history` cells draw --prs / 10 histories of main, 50 identical PRs "
    "against each; the live default path's per-history figures are exact in "
    "tests/unit/test_live_default_path.py.",
    "issue 45's cells run at the --prs size (no halving); 100 PRs put a rate near 5 % "
    "within about +- 4 points, so a MISS at 6-7 % there is not shown to exceed 5 %.",
    "the action target (1,000 x 3 at 100 ms, <= 1.15x one side) is measured by "
    "benchmarks/engine.py, not here.",
    "the diffuse drop's >= 95 % applies per path: both sides with a fixed repeat, and the "
    "pooled base (head auto<=30, 5 stored runs); with `auto` on both sides it is shown: "
    "the designs that catch it spend more than the calls target allows on 0.9->0.5 "
    "(docs/statistics.md, `repeat: auto`, what was tried).",
)


def run_all(planned: Sequence[Cell], workers: int) -> Results:
    order = sorted(planned, key=lambda c: -c.prs * c.scenario.evals)
    found: Results = {}
    if workers <= 1:
        mapped: Callable[..., object] = map
        found.update(dict(mapped(run_cell, order)))  # type: ignore[call-overload]
    else:
        with multiprocessing.Pool(workers) as pool:
            found.update(dict(pool.imap_unordered(run_cell, order)))
    return {cell.key: found[cell.key] for cell in planned}


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--prs", type=int, default=400,
                        help="simulated PRs per cell (a quarter for 100-eval and fault cells)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one PR per cell: a smoke run")
    parser.add_argument("--only", action="append",
                        help="only the cells whose name contains this text (repeatable)")
    args = parser.parse_args(argv)
    prs = 1 if args.quick else args.prs
    started, load = time.perf_counter(), os.getloadavg()
    planned = cells(prs, args.seed, args.only, smoke=args.quick)
    print(f"load average at start: {load[0]:.2f}; {len(planned)} cells, {prs} PRs per cell, "
          f"seed {args.seed}; rates with their Wilson 95 % interval over the PRs")
    results = run_all(planned, args.workers)
    printed = Printed()
    for section in (false_alarms, drift_and_pooled, live_default_path, drift_margin,
                    every_path, per_history, detection, faults, monotone, calls):
        section(results, printed)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds()
    print("\nTime")
    # Wall time depends on what else the machine runs (it is shared); CPU time much
    # less, but it moves with the machine: a run took 799 s on one development machine,
    # and 1,124 s on a slower one after speed-ups that cut a third of the CPU measured
    # on one machine. A bound in seconds would judge the
    # machine, not the code, so the time is shown, not a target; a change to the
    # decision code's speed is measured against the old code in one run (README).
    simulated = sum(cell.prs for cell in planned)
    printed.row("CPU time, user + system, all processes", f"{cpu:.0f} s", "info")
    printed.row("  ... per simulated PR", f"{cpu / max(1, simulated) * 1000:.1f} ms", "info")
    printed.row("wall time", f"{elapsed:.0f} s", "info")
    print(f"  load average at end: {os.getloadavg()[0]:.2f}")
    print("\nLeft out, and why:")
    for line in LEFT_OUT:
        print(f"  - {line}")
    if printed.missed:
        print(f"\n{len(printed.missed)} target(s) missed: " + "; ".join(printed.missed))
        return 1
    print("\nevery target met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
