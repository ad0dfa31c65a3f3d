"""Base-vs-head comparison of two run reports: evals (`evals.py`), their evidence and
verdicts (`evidence.py`), protocol cases (`protocol.py`), sample files
(`calibration.py`) and the cost alert (`cost.py`), put together here.

This module only describes what changed. Whether that fails the check is policy
(`--fail-on`), decided by the caller from the counts exposed here.

Decisions:
- A base suite whose path (after `renames`) is absent from head is `removed`, whether
  or not the PR deleted the file; `deleted_in_pr` tells the two apart. Its base cost
  counts in the delta as a negative contribution.
- Evals match by `name`, then by `prompt` among the still unmatched ones.
- "Cost" in totals and in the alert is the whole spend: model plus judge cost.
- Deltas are head − base. A new eval/suite's delta is its head value, a removed one's
  the negated base value; otherwise a cost delta is None when either side is unpriced.
- Without a base report (`base=None`) every suite is new and no alert is raised.
- Each eval also gets a statistical `verdict` from both sides' samples, decided for
  all evals of the comparison together (`turncheck.stats.verdicts`, docs/statistics.md);
  the older `transition`/`regression` fields describe the (median) status change only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from turncheck.compare.calibration import compare_calibrations
from turncheck.compare.cost import cost_alert, cost_note, cost_percent, price_note
from turncheck.compare.evals import compare_suites, count
from turncheck.compare.evidence import (
    own_variances,
    pooled_variance,
    record_mode_note,
    sampled_apart,
    separate_auto_warning,
    separate_runs_note,
    separate_runs_pool,
    suite_level_evidence,
    suites_evidence,
    with_decisions,
    with_suite_decisions,
)
from turncheck.compare.latency import latency_of, measured
from turncheck.compare.protocol import compare_protocols, protocol_evidence, with_case_decisions
from turncheck.compare.rows import (
    decide_groups,
    pair_by_path,
)
from turncheck.report.comparison import (
    Comparison,
    CostAlert,
    CostThresholds,
    SuiteComparison,
    Summary,
)
from turncheck.report.pool import BasePool
from turncheck.report.protocol_comparison import ProtocolComparison
from turncheck.report.run import Report
from turncheck.report.spend import add_spend, spend_delta
from turncheck.stats.verdicts import (
    DEFAULT_SETTINGS,
    VerdictSettings,
)

# --- the comparison ---------------------------------------------------------------

NO_RENAMES: Mapping[str, str] = MappingProxyType({})
NO_THRESHOLDS = CostThresholds()


def compare_reports(
    base: Report | None,
    head: Report,
    *,
    renames: Mapping[str, str] = NO_RENAMES,
    removed: Iterable[str] = (),
    thresholds: CostThresholds = NO_THRESHOLDS,
    verdict_settings: VerdictSettings = DEFAULT_SETTINGS,
    base_pool: BasePool | None = None,
) -> Comparison:
    """Compare `head` against `base`.

    `renames` maps a head suite path to its base path; `removed` lists suite paths the
    PR deleted (it only sets `deleted_in_pr`: any base suite missing from head is removed).
    `base_pool` says that `base` pools several runs of main (`compare.pool`): its evals
    are then tested against a new run of the base, drift included.
    """
    deleted = set(removed)
    pairs = pair_by_path(base.suites if base else [], head.suites, renames)
    suites = [compare_suites(b, h, deleted_in_pr=b is not None and b.path in deleted)
              for b, h in pairs]
    if measured(base) and measured(head):
        threshold = thresholds.latency_percent
        suites = [suite.model_copy(update={"latency": latency_of(b, h, threshold)})
                  for suite, (b, h) in zip(suites, pairs, strict=True)]
    protocols = compare_protocols(base, head, renames=renames)
    # Two separate runs: the base is one run of a pool, drift estimated from both sides.
    apart = None if base_pool is not None or base is None or not sampled_apart(base, head) \
        else separate_runs_pool(suites)
    pool = base_pool or apart
    # One family for multiplicity: every eval and every protocol case of the PR.
    variance = 0.0 if pool is None else pooled_variance(suites, pool)
    evidence = suites_evidence(suites, verdict_settings, pool, variance,
                               {} if pool is None else own_variances(suites, pool))
    suite_level = suite_level_evidence(suites, evidence, verdict_settings, pool, variance)
    case_evidence = [] if protocols is None else protocol_evidence(protocols, verdict_settings)
    decided, suite_decided, case_decided = decide_groups(
        [evidence, suite_level, case_evidence], verdict_settings)
    suites = with_suite_decisions(with_decisions(suites, evidence, decided), suite_level,
                                  suite_decided)
    if protocols is not None:
        protocols = with_case_decisions(protocols, case_evidence, case_decided)
    totals = with_protocol_spend(_totals(suites, has_base=base is not None), protocols)
    percent, alert = _cost_change(totals, thresholds)
    return Comparison(
        base_commit=base.commit if base else None, head_commit=head.commit,
        has_base=base is not None, mode=head.mode, price_source=head.price_source,
        price_note=price_note(base, head),
        diagnostics=[*head.diagnostics, *separate_auto_warning(suites, pool),
                     *([] if apart is None else separate_runs_note(apart, variance)),
                     *record_mode_note(base, head, suites)],
        thresholds=thresholds, suites=suites, totals=totals,
        cost_delta_percent=percent, alert=alert, cost_note=cost_note(base, head, totals),
        calibration=compare_calibrations(
            base.calibrations if base else None, head.calibrations, renames
        ),
        protocols=protocols,
        pooled_runs=None if base_pool is None else base_pool.runs,
        drift_sigma=None if pool is None else round(math.sqrt(variance), 3),
        baseline_note=None if base_pool is None else base_pool.note,
    )


def _totals(suites: list[SuiteComparison], has_base: bool) -> Summary:
    bases = [s.totals.base for s in suites if s.totals.base is not None]
    base = add_spend(bases) if has_base else None
    head = add_spend(s.totals.head for s in suites if s.totals.head is not None)
    return Summary(
        base=base, head=head, delta=spend_delta(base, head),
        counts=count(e for s in suites for e in s.evals),
    )


def _cost_change(totals: Summary, thresholds: CostThresholds
                 ) -> tuple[float | None, CostAlert | None]:
    """Total cost change in percent and the alert; (None, None) without two priced totals."""
    base_cost = totals.base.total_cost_usd if totals.base is not None else None
    head_cost = totals.head.total_cost_usd if totals.head is not None else None
    if base_cost is None or head_cost is None:
        return None, None
    return cost_percent(base_cost, head_cost), cost_alert(base_cost, head_cost, thresholds)



def with_protocol_spend(totals: Summary, protocols: ProtocolComparison | None) -> Summary:
    """`totals` with the protocol suites' tokens and cost added (counts are the evals')."""
    if protocols is None:
        return totals
    base = None if totals.base is None else add_spend(
        [totals.base, *([protocols.base] if protocols.base else [])]
    )
    head = add_spend([*([totals.head] if totals.head else []),
                      *([protocols.head] if protocols.head else [])])
    return Summary(base=base, head=head, delta=spend_delta(base, head), counts=totals.counts)
