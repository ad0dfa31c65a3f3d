"""`repeat: auto` as a valid sequential design: each eval's looks are decided on both
sides' samples together, and the comparison tests what is valid for how the sides were
sampled (docs/statistics.md, "repeat: auto")."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, FAST_RETRIES, run_paths, suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.compare.protocol import case_evidence
from turncheck.engine.runner import Side, run_both_sides
from turncheck.engine.settings import RunSettings
from turncheck.formats.suite_loader import load_suite
from turncheck.report.protocol_comparison import CaseComparison, CaseSide
from turncheck.report.rows import Transition
from turncheck.report.run import Report
from turncheck.stats.adaptive import joint_next, more_samples
from turncheck.stats.looks import Look, stratified_shift_test
from turncheck.stats.tests import turn_shift_test
from turncheck.stats.verdicts import Verdict

EVAL = """  - name: capital
    prompt: capital of France?
    checks:
      - match: "*Paris*"
"""
AUTO = "  repeat: auto\n  max_repeat: 20\n"


def test_the_stopping_rule_sees_both_sides() -> None:
    base = [1] * 10  # alone, base would stop: all ten agree
    head = [1] * 7 + [None] * 3
    assert more_samples(base, 20) == 0
    assert joint_next(base, head, 20) == 10
    # Both agreeing on the same outcome after the first look of 5: both stop.
    assert joint_next([1] * 5, [1] * 5, 20) == 0
    # Agreeing each on its own but not with each other (5/5 vs 0/5): sample on.
    assert joint_next([1] * 5, [None] * 5, 20) == 5


def _settings(server: ScriptedServer) -> RunSettings:
    return RunSettings(mode="live", provider="openai", base_url=server.base_url,
                       env={"OPENAI_API_KEY": FAKE_KEY}, session=FAST_RETRIES)


def _side(tmp_path: Path, name: str, server: ScriptedServer) -> Side:
    path = write_suite(tmp_path / name, suite_yaml(EVAL, AUTO))
    return Side([load_suite(path, "checks.eval.yaml")], _settings(server))


def _servers() -> tuple[ScriptedServer, ScriptedServer]:
    base, head = ScriptedServer(), ScriptedServer()
    base.default_reply = "Paris"
    head.add_rule("Paris it is", contains="capital", times=3)
    head.default_reply = "Lyon"
    return base, head


def test_base_alone_would_stop_but_is_topped_up_when_head_varies(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    base_server, head_server = _servers()
    with base_server, head_server:
        alone = run_paths([write_suite(tmp_path, suite_yaml(EVAL, AUTO))], base_server)
        head, base = asyncio.run(run_both_sides(_side(tmp_path, "head", head_server),
                                                _side(tmp_path, "base", base_server)))
    assert alone.suites[0].evals[0].repeats is not None
    assert alone.suites[0].evals[0].repeats.samples == 10
    assert base is not None
    base_eval, head_eval = base.suites[0].evals[0], head.suites[0].evals[0]
    assert base_eval.repeats is not None and head_eval.repeats is not None
    assert (base_eval.repeats.passes, base_eval.repeats.samples) == (20, 20)
    assert (head_eval.repeats.passes, head_eval.repeats.samples) == (3, 20)
    # Looks of 5, 5 and 10: the head looked worse after each.
    assert [s.look for s in base_eval.samples] == [0] * 5 + [1] * 5 + [2] * 10
    token = base_eval.repeats.paired
    assert token is not None and head_eval.repeats.paired == token
    # Stopped together: every look is tested by the design's exact test.
    comparison = compare_reports(base, head)
    [row] = comparison.suites[0].evals
    assert row.verdict is Verdict.REGRESSION
    assert row.base is not None and len(row.base.looks) == 3
    assert not [d for d in comparison.diagnostics if d.code == "separate-auto-runs"]


def _alone(tmp_path: Path, name: str, server: ScriptedServer) -> Report:
    (tmp_path / name).mkdir()
    return run_paths([write_suite(tmp_path / name, suite_yaml(EVAL, AUTO))], server)


def test_separately_sampled_sides_are_compared_on_their_first_look_only(
        tmp_path: Path) -> None:
    base_server, head_server = ScriptedServer(), ScriptedServer()
    base_server.default_reply = "Paris"
    head_server.add_rule("Paris it is", contains="capital", times=8)
    head_server.default_reply = "Lyon"
    with base_server, head_server:
        base = _alone(tmp_path, "base", base_server)  # stops at 10/10 on its own
        head = _alone(tmp_path, "head", head_server)  # 8/10, topped up alone to 8/20
    base_eval, head_eval = base.suites[0].evals[0], head.suites[0].evals[0]
    assert base_eval.repeats is not None and head_eval.repeats is not None
    assert (base_eval.repeats.samples, head_eval.repeats.samples) == (10, 20)
    assert base_eval.repeats.paired is None
    renames = {head.suites[0].path: base.suites[0].path}
    # As reports of a turncheck that did not record which run sampled them.
    comparison = compare_reports(base.model_copy(update={"run_id": None}),
                                 head.model_copy(update={"run_id": None}), renames=renames)
    [row] = comparison.suites[0].evals
    # The comparison says why only the first looks count.
    [warned] = [d for d in comparison.diagnostics if d.code == "separate-auto-runs"]
    assert not warned.is_error and "only their first looks are tested" in warned.message
    # 10/10 against 8/20 pooled would be p < 0.002: a biased test of optional stopping.
    # Valid is 10/10 against the head's first look, 8/10: no regression can be proven.
    assert row.verdict is not Verdict.REGRESSION
    assert row.p_value is not None and row.p_value > 0.05
    # The same samples had both sides been sampled jointly to 20 would be tested in full.
    assert turn_shift_test([1] * 10, [1] * 8 + [None] * 12).worse < 0.002
    # Reports that name their separate runs: the base is one run of a pooled base, the
    # head's first look and top-up are tested as taken, the drift allowed for.
    apart = compare_reports(base, head, renames=renames)
    assert base.run_id is not None and base.run_id != head.run_id
    assert not [d for d in apart.diagnostics if d.code == "separate-auto-runs"]
    [drift] = [d for d in apart.diagnostics if d.code == "separate-runs"]
    assert "drift between the runs" in drift.message and apart.drift_sigma is not None


def _brute_force_worse(looks: list[Look]) -> float:
    """P(head rank sum ≥ observed), enumerating the side labels within each look."""
    from turncheck.stats.tests import outcome_ranks

    base = [o for look in looks for o in look.base]
    head = [o for look in looks for o in look.head]
    ranks, _ = outcome_ranks(base, head)
    pooled_ranks, start_base, start_head = [], 0, len(base)
    for look in looks:
        pooled_ranks.append((ranks[start_base:start_base + len(look.base)]
                             + ranks[start_head:start_head + len(look.head)], len(look.head)))
        start_base += len(look.base)
        start_head += len(look.head)
    observed = sum(ranks[len(base):])
    sums = [0]
    for look_ranks, chosen in pooled_ranks:
        subsets = [sum(c) for c in itertools.combinations(look_ranks, chosen)]
        sums = [a + b for a in sums for b in subsets]
    return sum(s >= observed for s in sums) / len(sums)


@pytest.mark.parametrize("looks", [
    [Look([1, 1, 1], [1, None, 2]), Look([1, 1], [None, None])],
    [Look([1, 2, None], [2, None, None]), Look([1, 1, 1], [2, 1, None]),
     Look([None], [1])],
])
def test_the_stratified_test_permutes_sides_within_each_look(looks: list[Look]) -> None:
    assert stratified_shift_test(looks).worse == pytest.approx(_brute_force_worse(looks))


def test_with_one_look_the_stratified_test_is_the_plain_test() -> None:
    base, head = [1, 1, 2, None, 1], [2, None, None, 1]
    assert stratified_shift_test([Look(base, head)]) == turn_shift_test(base, head)


def test_a_side_without_a_partner_decides_alone_and_is_not_paired(tmp_path: Path) -> None:
    base_server, head_server = _servers()
    (tmp_path / "head").mkdir()
    (tmp_path / "base").mkdir()
    other = write_suite(tmp_path / "base", suite_yaml(EVAL.replace("capital", "other"), AUTO))
    with base_server, head_server:
        head, base = asyncio.run(run_both_sides(
            _side(tmp_path, "head", head_server),
            Side([load_suite(other, "other.eval.yaml")], _settings(base_server))))
    head_eval = head.suites[0].evals[0]
    assert head_eval.repeats is not None and head_eval.repeats.paired is None
    assert head_eval.repeats.samples == 20
    assert base is not None
    other_eval = base.suites[0].evals[0]
    assert other_eval.repeats is not None and other_eval.repeats.paired is None
    assert other_eval.repeats.samples == 5  # the first look, all passed


def _case(base: CaseSide, head: CaseSide) -> CaseComparison:
    return CaseComparison(id="c", transition=Transition.UNCHANGED, regression=False,
                          base_status=None, head_status=None, base=base, head=head)


def test_adaptive_protocol_cases_are_tested_on_their_first_look_only() -> None:
    # Base stopped at 10 perfect scores; head scored 0.8 ten times, then 0.0 ten times.
    base = CaseSide(passes=10, samples=10, scores=[1.0] * 10, first_look=10)
    head_scores = [0.8] * 10 + [0.0] * 10
    adaptive = case_evidence(_case(base, CaseSide(passes=10, samples=20, scores=head_scores,
                                                  first_look=10)))
    fixed = case_evidence(_case(base.model_copy(update={"first_look": None}),
                                CaseSide(passes=10, samples=20, scores=head_scores)))
    assert adaptive.rate_change == pytest.approx(-0.2)  # the first look's 1.0 → 0.8
    assert fixed.rate_change == pytest.approx(-0.6)  # all samples, as a fixed repeat
