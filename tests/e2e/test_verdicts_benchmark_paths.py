"""benchmarks/verdicts.py's cells of issue 45: the live default path, drift sigma 0.5
with its margin, and the usual set-up (one run of the base commit plus earlier main
runs) are built as the action builds them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "verdicts.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verdicts_benchmark_paths", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_usual_set_up_pools_the_base_commits_run_and_reads_the_others_for_drift(
        bench: ModuleType) -> None:
    scenario = bench.scenarios()["live null 20 at 0.5"]
    live = bench.LIVE_SAMPLINGS[-1]  # 5 stored runs of one sample, 1 of the base commit
    history = np.ones((live.history_runs, scenario.evals, bench.MAX_SAMPLES), dtype=int)
    report, pool = bench.pooled_base(scenario, history, live)
    assert (pool.runs, pool.history_runs) == (1, 5)
    assert all(e.repeats is None for s in report.suites for e in s.evals)  # unrepeated
    usual = bench.USUAL_5
    _, pool = bench.pooled_base(scenario, history, usual)
    assert (pool.runs, pool.history_runs) == (1, 5)
    _, pool = bench.pooled_base(scenario, history, bench.POOLED_FIXED_20)
    assert (pool.runs, pool.history_runs) == (5, 5)


def test_issue_45s_cells_are_planned_with_their_paths(bench: ModuleType) -> None:
    planned = bench.cells(1, 2024, ["live null", "margin null", "path "], smoke=True)
    keys = [cell.key for cell in planned]
    assert sum(k.startswith("live null") for k in keys) == 10 * len(bench.LIVE_SAMPLINGS)
    assert sum(k.startswith("margin null") for k in keys) == 6 * len(bench.MARGIN_SAMPLINGS)
    assert sum(k.startswith("path ") for k in keys) == 6 * len(bench.EVERY_PATH)
    apart = [c for c in planned if c.key.startswith("path turn shift")
             and c.sampling.apart]
    assert apart and len(set(bench.run_ids(apart[0].scenario, apart[0].sampling))) == 2
