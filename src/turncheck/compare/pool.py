"""Pool several trusted runs of the base into one base side, and say how much to trust it.

`pool_reports` takes reports of the default branch's runs (newest, preferred first:
the base commit's own runs, then earlier ones), as the action finds them. It returns

- the pooled base report: the first report, each of its repeated evals holding the
  samples of every report *of the same commit* whose eval has the same identity (suite
  path, model, provider, eval name and first prompt); an eval another run does not
  have, or has with another identity, is never pooled with it; an unrepeated eval
  (one sample) is not pooled: one sample per side is a transition (docs/statistics.md);
- a `BasePool`: each pooled eval's per-run counts, and the run-level drift variance
  estimated from every given report (the history: earlier commits' runs count too,
  an eval's runs matched by the same identity) by `stats.pooled.between_run_variance`.

The comparison (`compare_reports(..., base_pool=...)`) then tests each pooled eval with
the predictive test of `stats.pooled`, and shows `BasePool.note` when the baseline is
stale (not of the base commit) or drifting (estimated drift sigma at least
`DRIFTING_SIGMA`).
"""

from __future__ import annotations

from collections.abc import Sequence

from turncheck.engine.repeats import RepeatPlan, outcome_of, status_of, summarize
from turncheck.report.pool import BasePool, PooledEval
from turncheck.report.results import USABLE, SampleResult, Status
from turncheck.report.run import EvalResult, Report, SuiteResult
from turncheck.stats.pooled import between_run_variance, shared_run_variance

MAX_POOLED_RUNS = 8
"""At most this many trusted runs' reports are read for one pull request's base."""

EvalIdentity = tuple[str, str, str, str, str]
"""(suite path, model, provider, eval name, first prompt)."""


def identity(suite: SuiteResult, result: EvalResult) -> EvalIdentity:
    return suite.path, suite.model, suite.provider, result.name, result.prompt


def _samples(result: EvalResult) -> list[SampleResult]:
    if result.samples:
        return list(result.samples)
    return [SampleResult(index=0, seed=None, status=result.status, error=result.error,
                         usage=result.usage, cost_usd=result.cost_usd,
                         passed_on_turn=result.passed_on_turn)]


def outcomes_of(result: EvalResult) -> list[int | None]:
    """Each usable sample's turn of pass (None when it failed); errored and skipped
    samples are left out."""
    samples: Sequence[EvalResult | SampleResult] = result.samples or [result]
    return [s.passed_on_turn if s.status is Status.PASS else None
            for s in samples if s.status in USABLE]


def run_counts(result: EvalResult) -> tuple[int, int]:
    """(passes, usable samples) of one run's eval."""
    outcomes = outcomes_of(result)
    return sum(o is not None for o in outcomes), len(outcomes)


def _indexed(reports: Sequence[Report]) -> list[dict[EvalIdentity, EvalResult]]:
    return [{identity(suite, result): result for suite in report.suites
             for result in suite.evals} for report in reports]


def _merged(results: Sequence[EvalResult]) -> EvalResult:
    """The first result holding every result's samples, all in one look (the pooled
    base is one fixed sample, whatever each run's looks were). A sample keeps the index
    it had in its own run; the other runs' samples drop their conversations (the
    verdict never reads them), so the pooled report stays about one run's size."""
    samples = [*(_one_look(s) for s in _samples(results[0])),
               *(_one_look(s, keep_turns=False) for r in results[1:] for s in _samples(r))]
    plan = RepeatPlan(len(samples), len(samples), None)
    return results[0].model_copy(update={
        "status": status_of(samples, None),
        "repeats": summarize(samples, plan, [outcome_of(s) for s in samples]),
        "samples": samples,
    })


def _one_look(sample: SampleResult, keep_turns: bool = True) -> SampleResult:
    update: dict[str, object] = {}
    if sample.look != 0:
        update["look"] = 0
    if sample.turns and not keep_turns:
        update["turns"] = []
    return sample.model_copy(update=update) if update else sample


def pool_reports(reports: Sequence[Report], base_commit: str | None = None,
                 stale_hours: float | None = None) -> tuple[Report, BasePool]:
    """The pooled base report and its `BasePool` (see the module docstring). The first
    report is the reference; `stale_hours` how much older its commit is than
    `base_commit` (only reported when the commits differ)."""
    if not reports:
        raise ValueError("pooling needs at least one report")
    reference = reports[0]
    same_commit = [r for r in reports if r.commit == reference.commit]
    indexed = _indexed(same_commit)
    suites, pooled = [], []
    for suite in reference.suites:
        evals = []
        for result in suite.evals:
            key = identity(suite, result)
            # An unrepeated eval stays one sample: judged as a transition (one sample
            # per side), not as one sample against many.
            found = [index[key] for index in indexed if key in index] \
                if result.repeats is not None else [result]
            evals.append(_merged(found) if len(found) > 1 else result)
            pooled.append(PooledEval(suite_path=suite.path, name=result.name,
                                     runs=[run_counts(r) for r in found]))
        suites.append(suite.model_copy(update={"evals": evals}))
    stale = base_commit is not None and reference.commit != base_commit
    shared = shared_run_variance(aligned_history(reports), margin=True)
    pool = BasePool(runs=len(same_commit), history_runs=len(reports),
                    drift_variance=round(history_variance(reports), 6),
                    shared_variance=round(shared, 6) if len(reports) >= 2 else None,
                    stale=stale,
                    stale_hours=stale_hours if stale else None, evals=pooled)
    return reference.model_copy(update={"suites": suites}), pool


def aligned_history(reports: Sequence[Report]) -> list[list[tuple[int, int]]]:
    """Every eval's (passes, usable samples) in each report, (0, 0) where it is missing."""
    indexed = _indexed(reports)
    keys = {key: None for index in indexed for key in index}
    return [[run_counts(index[key]) if key in index else (0, 0) for index in indexed]
            for key in keys]


def history_variance(reports: Sequence[Report]) -> float:
    """Run-level drift variance from every report's runs, evals matched by identity: the
    cautious estimate (plus its standard error, and the margin predicting a new run from
    so few runs costs) the pooled tests are widened by."""
    by_eval: dict[EvalIdentity, list[tuple[int, int]]] = {}
    for index in _indexed(reports):
        for key, result in index.items():
            by_eval.setdefault(key, []).append(run_counts(result))
    return between_run_variance(list(by_eval.values()), cautious=True, runs_margin=True)
