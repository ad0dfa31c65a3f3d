"""Merge shard reports into the report one unsharded run would have written.

Shards must come from one plan: the same commit, mode, price timestamp, shard
count and eval plan; each index exactly once. Anything else is an error that
names the offending report.
"""

from __future__ import annotations

from collections.abc import Sequence
from graphlib import TopologicalSorter
from itertools import pairwise

from turncheck.diagnostics import Diagnostic, sort_key
from turncheck.engine.summary import run_totals, with_suite_totals
from turncheck.report.run import Report, ShardInfo, SuiteResult


class MergeError(ValueError):
    """The shard reports cannot be merged; the message names the report."""


def _shard(name: str, report: Report) -> ShardInfo:
    if report.shard is None:
        raise MergeError(f"{name} is not a shard report (it was not run with --shard)")
    return report.shard


def _check_same(named: Sequence[tuple[str, Report]]) -> None:
    first_name, first = named[0]
    reference = {
        "commit": first.commit,
        "mode": first.mode,
        "price timestamp": first.price_source.timestamp,
        "shard count": _shard(first_name, first).count,
        "eval plan": _shard(first_name, first).plan,
        "report schema": first.schema_version,
    }
    for name, report in named[1:]:
        shard = _shard(name, report)
        current = {
            "commit": report.commit,
            "mode": report.mode,
            "price timestamp": report.price_source.timestamp,
            "shard count": shard.count,
            "eval plan": shard.plan,
            "report schema": report.schema_version,
        }
        for what, value in current.items():
            if value != reference[what]:
                raise MergeError(
                    f"{name} does not match {first_name}: {what} {value!r} vs {reference[what]!r}"
                )


def _check_complete(named: Sequence[tuple[str, Report]]) -> None:
    count = _shard(*named[0]).count
    seen: dict[int, str] = {}
    for name, report in named:
        index = _shard(name, report).index
        if index in seen:
            raise MergeError(f"shard {index}/{count} appears twice: {seen[index]} and {name}")
        seen[index] = name
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise MergeError(f"missing shard report(s): {', '.join(missing)}")


def _suite_order(reports: Sequence[Report]) -> list[str]:
    """Every suite path, in the discovery order the shards share."""
    graph: TopologicalSorter[str] = TopologicalSorter()
    for report in reports:
        paths = [s.path for s in report.suites]
        for path in paths:
            graph.add(path)
        for before, after in pairwise(paths):
            graph.add(after, before)
    return list(graph.static_order())


def _merged_suite(parts: list[SuiteResult]) -> SuiteResult:
    evals = sorted((e for part in parts for e in part.evals), key=lambda e: e.line)
    return with_suite_totals(parts[0], evals)


def _diagnostics(reports: Sequence[Report]) -> list[Diagnostic]:
    unique = {d for report in reports for d in report.diagnostics}
    return sorted(unique, key=sort_key)


def merged_run_id(reports: Sequence[Report]) -> str | None:
    """The shards' run ids in shard order: each shard of a two-commit run sampled both
    sides together, so the merged base and head share it exactly when their shards
    were sampled in the same jobs. None when a shard has none (an older turncheck)."""
    ids = [report.run_id for report in reports]
    return None if None in ids else "+".join(str(found) for found in ids)


def merge_reports(named: Sequence[tuple[str, Report]]) -> Report:
    """One report from (name, shard report) pairs; raises MergeError."""
    if not named:
        raise MergeError("no shard reports given")
    _check_same(named)
    _check_complete(named)
    reports = [report for _, report in sorted(named, key=lambda item: _shard(*item).index)]
    by_path: dict[str, list[SuiteResult]] = {}
    for report in reports:
        for suite in report.suites:
            by_path.setdefault(suite.path, []).append(suite)
    suites = [_merged_suite(by_path[path]) for path in _suite_order(reports)]
    unpriced = {model for report in reports for model in report.totals.unpriced_models}
    first = reports[0]
    return first.model_copy(
        update={
            "suites": suites,
            "diagnostics": _diagnostics(reports),
            "totals": run_totals(suites, unpriced),
            "started_at": min(r.started_at for r in reports),
            "duration_s": max(r.duration_s for r in reports),
            "live_tokens": sum(r.live_tokens for r in reports),
            # A protocol suite runs whole in one shard (see sharding.select_shard).
            "protocols": [p for report in reports for p in report.protocols],
            # Each shard is a run of its own with the whole budget: all are listed.
            "budgets": [b for report in reports for b in report.budgets],
            "shard": None,
            "run_id": merged_run_id(reports),
        }
    )
