"""The evidence behind each eval's and each suite's verdict: one-sample transitions,
sample counts, `repeat: auto` looks and joint designs, a pooled base (drift included),
base and head sampled in separate runs; then the decisions put back on the rows
(docs/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from turncheck.compare.evals import NOT_LIKE_FOR_LIKE, count, side_looks, side_outcomes
from turncheck.compare.rows import rounded, with_verdict
from turncheck.diagnostics import Diagnostic, warning
from turncheck.report.comparison import (
    EvalComparison,
    EvalSide,
    SuiteComparison,
)
from turncheck.report.pool import BasePool, PooledEval
from turncheck.report.run import Report
from turncheck.stats.drift import (
    MIN_HISTORY_RUNS,
    two_run_variance,
    two_run_variances_without,
)
from turncheck.stats.looks import sequential_test, testable_looks
from turncheck.stats.pooled import PooledBase, PooledHead, pooled_suite_test, two_stage_test
from turncheck.stats.tests import ShiftTest
from turncheck.stats.turn_hazards import drifting_turn_test
from turncheck.stats.verdicts import (
    DEFAULT_SETTINGS,
    Decision,
    Evidence,
    Verdict,
    VerdictSettings,
    missing_evidence,
    outcome_evidence,
    suite_evidence,
)
from turncheck.text.counts import counted


def eval_evidence(item: EvalComparison, settings: VerdictSettings = DEFAULT_SETTINGS
                  ) -> Evidence:
    """The evidence of the samples a valid test may use for how they were sampled
    (`turncheck.stats.adaptive`): all looks, stratified, when both sides stopped
    together; else each side's first look (all of a fixed side's samples)."""
    if item.base is None or item.head is None:
        return missing_evidence(item.base is not None)
    base_lost, head_lost = item.base.unusable, item.head.unusable
    if not item.base.looks and not item.head.looks:
        return outcome_evidence(side_outcomes(item.base), side_outcomes(item.head), settings,
                                base_lost=base_lost, head_lost=head_lost)
    joint = joint_test(item)
    looks = testable_looks(side_looks(item.base), side_looks(item.head), False)
    base = [o for look in looks for o in look.base]
    head = [o for look in looks for o in look.head]
    if joint is not None:  # the effects over every sample, the design's own test
        base, head = side_outcomes(item.base), side_outcomes(item.head)
    return outcome_evidence(base, head, settings, base_lost=base_lost,
                            head_lost=head_lost, test=joint)


def joint_design(item: EvalComparison) -> tuple[list[list[int | None]],
                                                 list[list[int | None]], int] | None:
    """Each side's outcomes per look and `max_repeat` when both sides of `repeat: auto`
    stopped together (the same pairing token); None otherwise."""
    if item.base is None or item.head is None or item.head.max_repeat is None:
        return None
    if item.base.paired is None or item.base.paired != item.head.paired:
        return None
    return side_looks(item.base), side_looks(item.head), item.head.max_repeat


def joint_test(item: EvalComparison) -> ShiftTest | None:
    """The joint sequential design's exact test (`stats.looks.sequential_test`); None
    when the sides were not sampled together, or a look is not the design's (an errored
    sample, an older report): the first look is then tested alone."""
    design = joint_design(item)
    return None if design is None else sequential_test(*design)


SEPARATE_AUTO = "separate-auto-runs"


def separate_auto_warning(suites: Sequence[SuiteComparison], pool: BasePool | None = None
                          ) -> list[Diagnostic]:
    """A warning when `repeat: auto` sides were sampled in separate runs: each stopped on
    its own samples, so only their first looks enter the tests. Evals tested against a
    pooled base (`pool`; two separate runs: `separate_runs_pool`) are not counted: their
    test allows for how the head stopped (`head_design`)."""
    found = [(suite, item) for suite, item in separately_adaptive(suites)
             if pool_runs(suite, item, pool) is None]
    if not found:
        return []
    return [warning(found[0][0].path, 1, 1, SEPARATE_AUTO, (
        f"{counted(len(found), 'eval')} used `repeat: auto` on both sides in separate "
        "runs: each side stopped on its own samples, so only their first looks are tested "
        "(the other samples count in k/n, not in the p-value); run base and head "
        "together (`turncheck diff`, or the action) to test them all"))]


def separately_adaptive(suites: Sequence[SuiteComparison]
                        ) -> list[tuple[SuiteComparison, EvalComparison]]:
    """Evals both of whose sides used `repeat: auto` but stopped each on its own samples
    (two separate runs): only their first looks can be tested."""
    return [(suite, item) for suite in suites for item in suite.evals
            if item.base is not None and item.head is not None
            and item.base.max_repeat is not None and item.head.max_repeat is not None
            and (item.base.paired is None or item.base.paired != item.head.paired)]


def head_design(side: EvalSide) -> tuple[list[int | None], list[int]]:
    """The head outcomes a test against another run may use, and the design they were
    taken by (`stats.pooled.design_of`): all of a fixed side's samples in one look; for
    `repeat: auto` alone, the first look and its top-up (a top-up that could have
    been taken counts even when the look stopped). When the first look did not stop
    although it all passed (on different turns), only that look is used: the
    two-stage law assumes a look stops when it all passed or all failed."""
    looks = side_looks(side)
    if not side.looks or side.max_repeat is None:
        outcomes = [o for look in looks for o in look]
        return outcomes, [len(outcomes)]
    first = looks[0]
    all_alike = len({o is None for o in first}) <= 1
    room = side.max_repeat - len(first)
    if len(looks) == 1 and all_alike and room > 0:
        return first, [len(first), room]
    if len(looks) == 2 and not all_alike and looks[1]:
        return [*first, *looks[1]], [len(first), len(looks[1])]
    return first, [len(first)]


def pooled_counts(item: EvalComparison, runs: Sequence[tuple[int, int]]
                  ) -> tuple[PooledBase, PooledHead] | None:
    """The pooled base and the head (with its design, `head_design`) of one eval judged
    on both sides; None when a side has no usable sample."""
    if item.base is None or item.head is None:
        return None
    base = side_outcomes(item.base)
    head, design = head_design(item.head)
    if not base or not head:
        return None
    return (PooledBase(sum(o is not None for o in base), len(base), max(1, len(runs))),
            PooledHead(sum(o is not None for o in head), len(head), tuple(design)))


def pooled_evidence(item: EvalComparison, runs: Sequence[tuple[int, int]], variance: float,
                    settings: VerdictSettings = DEFAULT_SETTINGS) -> Evidence:
    """Evidence against a pooled base: the effects as usual, the test against
    a new run of the base (`stats.pooled`)."""
    assert item.base is not None and item.head is not None
    counts = pooled_counts(item, runs)
    test = None if counts is None else pooled_eval_test(item, counts, variance)
    evidence = outcome_evidence(side_outcomes(item.base), head_design(item.head)[0],
                                settings, base_lost=item.base.unusable,
                                head_lost=item.head.unusable, test=test)
    stopped = counts is not None and len(counts[1].looks) > 1
    return replace(evidence, allowance=drift_allowance(variance),
                   untested=STOPPED_HEAD if stopped else None)


STOPPED_HEAD = ("the turn of pass is not tested: the head (`repeat: auto`) stopped after "
                "its first look, and only its pass rate is tested against this base")


def drift_allowance(variance: float) -> str | None:
    """What a test against another run allowed for, in words (`Evidence.allowance`)."""
    if variance <= 0:
        return None
    return f"the drift between runs (σ ≈ {math.sqrt(variance):.2f} on the logit scale)"


def pooled_eval_test(item: EvalComparison, counts: tuple[PooledBase, PooledHead],
                     variance: float) -> ShiftTest:
    """A head of a fixed number of samples: compared with the base turn by turn, so a
    later turn of pass is tested too (`stats.turn_hazards.drifting_turn_test`, the drift
    of the head run against the K pooled runs' average, sigma² (1 + 1/K)); a two-stage
    `repeat: auto` head: the conditional test of its pass rate for that design
    (`stats.pooled.two_stage_test`)."""
    assert item.base is not None and item.head is not None
    base, head = counts
    if len(head.looks) == 1:
        return drifting_turn_test(side_outcomes(item.base), head_design(item.head)[0],
                                  variance * (1 + 1 / base.runs))
    return two_stage_test(base, variance, head.passes, head.samples, head.looks)


def pool_runs(suite: SuiteComparison, item: EvalComparison, base_pool: BasePool | None
              ) -> list[tuple[int, int]] | None:
    """The pooled runs of one eval judged on both sides; None when it is not pooled."""
    if base_pool is None or item.base is None or item.head is None:
        return None
    return base_pool.runs_of(suite.previous_path or suite.path, item.previous_name or item.name)


EvalKey = tuple[str, str]
"""(the suite's path as head names it, the eval's name)."""


def two_run_pairs(suites: Sequence[SuiteComparison], base_pool: BasePool
                  ) -> list[tuple[EvalKey, tuple[tuple[int, int], tuple[int, int]]]]:
    """Each pooled eval's (passes, samples) of the base and of the head run."""
    pairs = []
    for suite in suites:
        for item in suite.evals:
            runs = pool_runs(suite, item, base_pool)
            counts = None if runs is None else pooled_counts(item, runs)
            if counts is not None:
                base, head = counts
                pairs.append(((suite.path, item.name),
                              ((base.passes, base.samples), (head.passes, head.samples))))
    return pairs


def pooled_variance(suites: Sequence[SuiteComparison], base_pool: BasePool) -> float:
    """The run-level drift variance the pooled tests are widened by: main's history's
    estimate, or with fewer than two stored runs the two sides' (`stats.drift`)."""
    if base_pool.history_runs >= MIN_HISTORY_RUNS:  # at least the part every eval shares
        return max(base_pool.drift_variance, base_pool.shared_variance or 0.0)
    return two_run_variance([pair for _, pair in two_run_pairs(suites, base_pool)])


def own_variances(suites: Sequence[SuiteComparison], base_pool: BasePool
                  ) -> dict[EvalKey, float]:
    """With the drift from the two sides (fewer than two stored runs), each eval's own
    test widened by the drift the other evals show (`two_run_variances_without`), so
    its own change does not pass for drift; evals left out use `pooled_variance`."""
    if base_pool.history_runs >= MIN_HISTORY_RUNS:
        return {}
    keyed = two_run_pairs(suites, base_pool)
    withouts = two_run_variances_without([pair for _, pair in keyed])
    return {key: without for (key, _), without in zip(keyed, withouts, strict=True)
            if without is not None}


# --- base and head sampled in separate runs ----------------------------------------

SEPARATE_RUNS = "separate-runs"
MIN_SEPARATE_SAMPLES = 2
"""Usable samples each side of an eval needs for its drift-widened test when the sides
were sampled in separate runs; with fewer the eval keeps the both-sides test."""


def sampled_apart(base: Report, head: Report) -> bool:
    """Base and head were sampled live in separate runs: their run ids differ, or only
    one side has one (a report of an older turncheck and a newer one's were two runs).
    Two sides sampled together by one two-commit run share one run id (`Report.run_id`).
    Neither having one (two reports of an older turncheck, or made by hand) tells
    nothing: they are compared as before. Two replays sample nothing: their answers are
    the recordings, whichever runs replayed them."""
    if base.mode == "replay" and head.mode == "replay":
        return False
    return base.run_id != head.run_id


def separate_runs_pool(suites: Sequence[SuiteComparison]) -> BasePool | None:
    """The base of two separately run reports as a pooled base of one run: each eval with
    repeats on both sides is then tested against a new run of the base, widened by the
    drift the two runs show (`pooled_variance`, `stats.drift.two_run_variance`); None
    when no eval has them."""
    evals = [PooledEval(suite_path=suite.previous_path or suite.path,
                        name=item.previous_name or item.name,
                        runs=[(item.base.passes, item.base.samples)])
             for suite in suites for item in suite.evals
             if item.base is not None and item.head is not None
             and item.not_like_for_like is None
             and min(item.base.samples, item.head.samples) >= MIN_SEPARATE_SAMPLES]
    if not evals:
        return None
    return BasePool(runs=1, history_runs=1, drift_variance=0.0, evals=evals)


def separate_runs_note(pool: BasePool, variance: float) -> list[Diagnostic]:
    """The warning that the tests allow for drift between the two runs."""
    where = pool.evals[0].suite_path
    return [warning(where, 1, 1, SEPARATE_RUNS, (
        "base and head were sampled in separate runs: each test of an eval with repeats "
        f"on both sides ({counted(len(pool.evals), 'eval')}) allows for drift between "
        f"the runs, estimated from the two sides (σ ≈ {math.sqrt(variance):.2f} on the "
        "logit scale), so a change spread over many evals can pass for drift; run them "
        "together (`turncheck diff`, or the action) for the tighter tests"))]


RECORD_MIXED = "record-mixed-sampling"


def record_mode_note(base: Report | None, head: Report, suites: Sequence[SuiteComparison]
                     ) -> list[Diagnostic]:
    """Record mode runs both sides at once, but a side whose answers were recorded
    earlier replays them while the other records fresh ones: the two sides' samples may
    come from different times, and no test here can tell a drift between then and now
    from a change of the pull request. Said once, when a repeated eval is judged."""
    if base is None or "record" not in (base.mode, head.mode):
        return []
    repeated = [(suite, item) for suite in suites for item in suite.evals
                if item.base is not None and item.head is not None
                and min(item.base.samples, item.head.samples) >= MIN_SEPARATE_SAMPLES]
    if not repeated:
        return []
    return [warning(repeated[0][0].path, 1, 1, RECORD_MIXED, (
        "record mode: a side whose answers were recorded earlier replays them while the "
        "other records fresh ones, so a drift of the model between the recording and now "
        "cannot be told from a change of the pull request; for verdicts that allow for "
        "drift compare live runs (the action's default), or record both sides afresh"))]


def suites_evidence(suites: Sequence[SuiteComparison],
                    settings: VerdictSettings = DEFAULT_SETTINGS,
                    base_pool: BasePool | None = None, variance: float = 0.0,
                    own: Mapping[EvalKey, float] = MappingProxyType({})
                    ) -> list[Evidence]:
    """Each eval's evidence; a pooled one widened by its `own` drift variance, else by
    `variance`."""
    found = []
    for suite in suites:
        for item in suite.evals:
            if item.not_like_for_like is not None:  # nothing to test: the user changed
                found.append(Evidence(empty=True, cause=NOT_LIKE_FOR_LIKE))
                continue
            runs = pool_runs(suite, item, base_pool)
            found.append(eval_evidence(item, settings) if runs is None
                         else pooled_evidence(item, runs, own.get((suite.path, item.name),
                                                                  variance), settings))
    return found


def suite_level_evidence(suites: Sequence[SuiteComparison], evidence: Sequence[Evidence],
                         settings: VerdictSettings = DEFAULT_SETTINGS,
                         base_pool: BasePool | None = None, variance: float = 0.0
                         ) -> list[Evidence]:
    """One suite-level test per suite over its evals judged on both sides (`evidence`
    in `suites_evidence` order tells which were): the exact stratified test when both
    sides were sampled; against a pooled base the conditional suite test, whose law
    shares one run-level drift over the suite's evals (`stats.pooled.pooled_suite_test`)."""
    judged = iter(evidence)
    found = []
    for suite in suites:
        own = [next(judged) for _ in suite.evals]
        kept = [item for item, e in zip(suite.evals, own, strict=True)
                if item.base is not None and item.head is not None and not e.empty]
        if base_pool is not None and any(pool_runs(suite, item, base_pool) is not None
                                         for item in kept):
            found.append(pooled_suite_evidence(suite, kept, base_pool, variance, settings))
            continue
        found.append(suite_evidence([testable_outcomes(item) for item in kept], settings))
    return found


def testable_outcomes(item: EvalComparison) -> tuple[list[int | None], list[int | None]]:
    """The outcomes of each side a suite-level test may use: every sample of a fixed
    `repeat`, the first look of `repeat: auto` (its size was fixed whatever the samples
    said; how far an eval went on depends on its own split, which a stratified test
    given the pooled passes cannot allow for)."""
    assert item.base is not None and item.head is not None
    if not item.base.looks and not item.head.looks:
        return side_outcomes(item.base), side_outcomes(item.head)
    [look] = testable_looks(side_looks(item.base), side_looks(item.head), False)
    return list(look.base), list(look.head)


def pooled_suite_evidence(suite: SuiteComparison, kept: Sequence[EvalComparison],
                          base_pool: BasePool, variance: float,
                          settings: VerdictSettings) -> Evidence:
    """The suite-level evidence against a pooled base: its pooled evals' pass-rate
    change, tested by `pooled_suite_test`."""
    counted = [(item, found) for item in kept
               if (runs := pool_runs(suite, item, base_pool)) is not None
               and (found := pooled_counts(item, runs)) is not None]
    strata = [(side_outcomes(item.base), head_design(item.head)[0])
              for item, _ in counted if item.base is not None and item.head is not None]
    evidence = suite_evidence(strata, settings)
    if evidence.empty:
        return evidence
    shared = base_pool.shared_variance if base_pool.history_runs >= MIN_HISTORY_RUNS \
        else None
    return replace(evidence, test=pooled_suite_test([c[0] for _, c in counted],
                                                    [c[1] for _, c in counted], variance,
                                                    shared))


def with_decisions(suites: list[SuiteComparison], evidence: Sequence[Evidence],
                   decisions: Sequence[Decision]) -> list[SuiteComparison]:
    """Every eval with its decided verdict (in `suites_evidence` order), and the suites'
    counts again."""
    decided = iter(zip(evidence, decisions, strict=True))
    updated = []
    for suite in suites:
        evals = []
        for item in suite.evals:
            found, decision = next(decided)
            evals.append(with_verdict(item, decision, pass_rate_change=found.rate_change,
                                      turn_shift=found.turn_shift))
        totals = suite.totals.model_copy(update={"counts": count(evals)})
        updated.append(suite.model_copy(update={"evals": evals, "totals": totals}))
    return updated


SUITE_VERDICTS = (Verdict.REGRESSION, Verdict.IMPROVEMENT)
"""The suite-level tiers: anything short of them is no news about the suite. A suite
whose own evals already carry the same verdict gets none: they explain it."""


def with_suite_decisions(suites: list[SuiteComparison], evidence: Sequence[Evidence],
                         decisions: Sequence[Decision]) -> list[SuiteComparison]:
    """Every suite with its suite-level verdict (see `SuiteComparison.verdict`)."""
    updated = []
    for suite, found, decision in zip(suites, evidence, decisions, strict=True):
        explained = any(e.verdict is decision.verdict for e in suite.evals)
        news = not found.empty and decision.verdict in SUITE_VERDICTS and not explained
        updated.append(suite.model_copy(update={
            "verdict": decision.verdict if news else Verdict.UNCHANGED,
            "p_value": rounded(decision.p_value) if not found.empty else None,
            "verdict_reason": decision.reason if news else "",
            "pass_rate_change": rounded(found.rate_change),
        }))
    return updated


