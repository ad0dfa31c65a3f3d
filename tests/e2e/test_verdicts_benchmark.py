"""benchmarks/verdicts.py draws honest samples, asks the library's stopping rule and
decision code, and fails when a target is missed. The figures themselves are the
benchmark's (a full run takes minutes); here a tiny-size smoke run."""

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
    spec = importlib.util.spec_from_file_location("verdicts_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_samples_pass_at_the_set_rate_and_turn(bench: ModuleType) -> None:
    rng = np.random.default_rng(1)
    single = bench.draw_outcomes([bench.turn_chances(0.7, 1)], 200, rng, 0.0)
    assert 0.67 < (single > 0).mean() < 0.73
    three = bench.draw_outcomes([bench.turn_chances(0.7, 3)], 200, rng, 0.0)
    assert 0.67 < (three > 0).mean() < 0.73
    assert set(np.unique(three)) == {0, 1, 2, 3}
    shift = bench.draw_outcomes([(0.2, 1.0)], 200, rng, 0.0)
    assert 0.17 < (shift == 1).mean() < 0.23 and (shift > 0).all()


def test_drift_moves_whole_runs_not_samples(bench: ModuleType) -> None:
    """sigma shifts every eval of one run together: run means spread, rates 1.0 stay."""
    rng = np.random.default_rng(2)
    drifted = bench.draw_outcomes([(0.7,), (1.0,)], 400, rng, 1.0)
    run_means = (drifted[:, 0] > 0).mean(axis=1)
    assert run_means.std() > 0.15  # binomial noise alone: about 0.06
    assert (drifted[:, 1] > 0).all()


def test_sides_run_together_share_their_runs_drift_and_separate_runs_do_not(
        bench: ModuleType) -> None:
    rng = np.random.default_rng(4)
    shared = bench.run_shifts(rng, 400, 1, 1.0, False)
    together = [bench.draw_outcomes([(0.7,)], 400, rng, 1.0, shift=shared) for _ in range(2)]
    apart = [bench.draw_outcomes([(0.7,)], 400, rng, 1.0) for _ in range(2)]

    def correlation(pair: list[np.ndarray]) -> float:
        means = [(side[:, 0] > 0).mean(axis=1) for side in pair]
        return float(np.corrcoef(*means)[0, 1])

    assert correlation(together) > 0.6 and abs(correlation(apart)) < 0.2
    per_eval = bench.draw_outcomes([(0.7,)] * 2, 400, rng, 1.0, per_eval=True)
    assert abs(float(np.corrcoef(*[(per_eval[:, i] > 0).mean(axis=1)
                                   for i in range(2)])[0, 1])) < 0.2


def test_reports_of_sides_sampled_apart_name_two_runs_as_compare_reads_them(
        bench: ModuleType) -> None:
    """`compare` widens the tests of separately run reports by the drift: the cells
    whose sides are drawn apart must carry two run ids, the others one."""
    scenarios = bench.scenarios()
    drift = bench.DRIFT

    def runs(name: str, sampling: object) -> int:
        return len(set(bench.run_ids(scenarios[name], sampling)))

    assert runs(f"null 20 mixture, drift {drift:g} per eval", bench.FIXED_20) == 2
    assert runs(f"0.9->0.5 in 20 mixture, drift {drift:g} per eval", bench.AUTO_20) == 2
    assert runs(f"null 20 mixture, drift {drift:g} per eval, sides together",
                bench.FIXED_20) == 1
    assert runs("null 20 mixture", bench.AUTO_20_SEPARATE) == 2
    assert runs("null 20 mixture", bench.FIXED_20) == 1


def test_auto_asks_the_librarys_stopping_rule(bench: ModuleType) -> None:
    """Both sides together: 5 agreeing samples a side stop; a head that looks worse takes
    both sides on, look by look, to max_repeat; separate runs stop each on its own."""
    agree, worse = [1] * 60, [1, None] * 30
    assert bench.looks_of(agree, agree, bench.AUTO_20) == ([5], [5])
    assert bench.looks_of(agree, worse, bench.AUTO_20) == ([5, 5, 10], [5, 5, 10])
    assert bench.looks_of(worse, agree, bench.AUTO_20) == ([5], [5])  # head better: stop
    assert bench.looks_of(agree, worse, bench.AUTO_20_SEPARATE) == ([10], [10, 10])
    assert bench.looks_of(agree, worse, bench.FIXED_20) == ([20], [20])


def test_an_outage_reaches_the_comparison_as_errors(bench: ModuleType) -> None:
    scenario = bench.scenarios()["outage at head, 1 eval at 1.0"]
    streams = bench.draw_outcomes(scenario.base, 1, np.random.default_rng(3), 0.0)
    outcome = bench.one_pr(scenario, bench.FIXED_20, streams[0], streams[0])
    assert [s.value for s in outcome.head_statuses] == ["error"]
    assert outcome.head_calls == 20 and outcome.base_calls == 20


def test_history_cells_hold_main_runs_fixed_for_their_prs(bench: ModuleType) -> None:
    """Issue 45 item 4: PRs of one history meet the same stored runs of main; each
    history's false fails are counted apart."""
    scenario = bench.scenarios()["history null 20 at 0.5"]
    sampling = bench.replace(bench.HISTORY_SAMPLINGS[scenario.name][0], per_history=3)
    key, tally = bench.run_cell(bench.Cell(scenario, sampling, 6, 2024))
    assert key.startswith("history null 20 at 0.5 | pooled base of 1 run")
    assert len(tally.history_fails) == 2 and sum(tally.history_fails) == tally.default_gate
    seen: list[object] = []
    original = bench.pooled_base
    bench.pooled_base = lambda scenario, history, sampling: (
        seen.append(history.tobytes()) or original(scenario, history, sampling))
    try:
        bench.run_cell(bench.Cell(scenario, sampling, 6, 2024))
    finally:
        bench.pooled_base = original
    assert len(seen) == 6 and len(set(seen)) == 2


def test_quick_run_prints_every_target_and_fails_on_a_miss(
        bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    code = bench.main(["--quick", "--workers", "1"])
    out = capsys.readouterr().out
    for needed in ("Family-wise false alarms", "0.9->0.5 in 20 mixture | auto<=20",
                   "1->0.8 in 20 mixture | auto<=20", "diffuse 0.95->0.85 over 20",
                   "outage at head", "budget stop at head", "monotone", "CPU time",
                   "0.9->0.5 in 20 mixture | auto<=60", "null 20 at 0.7 | repeat 1 replay",
                   "The default gate", "auto<=20 separate runs",
                   "Issue 36: false regressions", "pooled base of 1 run",
                   "Issue 45 item 4", "histories failing > 10% of PRs",
                   "Left out, and why"):
        assert needed in out
    assert code == (1 if " MISS" in out else 0)
    assert ("target(s) missed" in out) == (code == 1)


def test_every_cell_draws_from_its_own_seed_stream(bench: ModuleType) -> None:
    """The seed was the first 16 characters of the name: "null 1 eval at 0.5" and
    "null 1 eval at 0.7" drew the same samples, and so did the 3-turn and drift mixtures."""
    scenarios = list(bench.scenarios().values())
    seeds = {bench.stream_seed(s, 2024, pooled) for s in scenarios for pooled in (False, True)}
    assert len(seeds) == 2 * len(scenarios)
