"""Repeated samples: independent conversations per eval, stored per sample in cassettes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.engine_helpers import only_eval, run_text, suite_yaml
from tests.support.scripted_server import ScriptedServer
from turncheck.providers.call_context import SAMPLE_HEADER
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.results import Status
from turncheck.report.run import Report

EVAL = """  - name: capital
    prompt: capital of France?
    checks:
      - match: "*Paris*"
"""


def _three_of_five(server: ScriptedServer) -> None:
    server.add_rule("Paris it is", contains="capital", times=3)
    server.default_reply = "Lyon"


def _stable(report: Report) -> str:
    # Timestamps and the run id apart (the run's start and, without --price-timestamp,
    # its price instant).
    data = report.model_dump(mode="json", exclude={"started_at": True, "duration_s": True,
                                                   "run_id": True,
                                                   "price_source": {"timestamp"}})
    return json.dumps(data, sort_keys=True)


def test_five_samples_three_passing_report_rate_interval_and_flakiness(
    tmp_path: Path,
) -> None:
    with ScriptedServer() as server:
        _three_of_five(server)
        report = run_text(tmp_path, suite_yaml(EVAL, "  repeat: 5\n"), server, mode="record")
        url = server.base_url
    result = only_eval(report)
    assert result.repeats is not None
    summary = result.repeats
    assert (summary.passes, summary.samples, summary.flaky) == (3, 5, True)
    assert (summary.pass_rate_low, summary.pass_rate_high) == pytest.approx((0.2307, 0.8824),
                                                                            abs=1e-4)
    assert (summary.pass_hat_n, summary.pass_at_n) == (False, True)
    assert summary.turn_of_pass == {"1": 3, "fail": 2}
    assert [s.index for s in result.samples] == [0, 1, 2, 3, 4]
    assert sorted(s.status for s in result.samples) == [Status.FAIL] * 2 + [Status.PASS] * 3
    assert all(len(s.turns) == 1 and s.usage.total > 0 for s in result.samples)
    # Default min_pass: every sample must pass.
    assert result.status is Status.FAIL and report.totals.failed == 1
    # Replaying the recorded cassette reproduces every sample, identically each time.
    first = run_text(tmp_path, suite_yaml(EVAL, "  repeat: 5\n"), None, "replay", base_url=url)
    second = run_text(tmp_path, suite_yaml(EVAL, "  repeat: 5\n"), None, "replay", base_url=url)
    assert _stable(first) == _stable(second)
    replayed = only_eval(first)
    assert replayed.repeats == summary
    assert [s.status for s in replayed.samples] == [s.status for s in result.samples]


def test_min_pass_sets_how_many_samples_an_eval_needs(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        _three_of_five(server)
        report = run_text(tmp_path, suite_yaml(EVAL, "  repeat: 5\n  min_pass: 3\n"), server)
    assert only_eval(report).status is Status.PASS


def test_a_fixed_seed_gives_each_sample_its_own_derived_seed(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.default_reply = "Paris"
        report = run_text(tmp_path, suite_yaml(EVAL, "  seed: 40\n  repeat: 3\n"), server)
        seeds = sorted(r.json["seed"] for r in server.requests)
    assert seeds == [40, 41, 42]
    assert [s.seed for s in only_eval(report).samples] == [40, 41, 42]


def test_record_fills_only_missing_samples_and_old_cassettes_are_sample_zero(
    tmp_path: Path,
) -> None:
    with ScriptedServer() as server:
        server.default_reply = "Paris"
        run_text(tmp_path, suite_yaml(EVAL), server, mode="record")
        cassette = cassette_path_for(tmp_path / "scripted.eval.yaml").read_text()
        assert SAMPLE_HEADER not in cassette  # unrepeated runs write what they always did
        url = server.base_url
        missing = only_eval(run_text(tmp_path, suite_yaml(EVAL, "  repeat: 3\n"), None,
                                     "replay", base_url=url))
        assert missing.repeats is not None and missing.repeats.passes == 1
        assert "sample 1" in (missing.error or "")
        before = len(server.requests)
        run_text(tmp_path, suite_yaml(EVAL, "  repeat: 3\n"), server, mode="record")
        assert len(server.requests) - before == 2
    replayed = only_eval(run_text(tmp_path, suite_yaml(EVAL, "  repeat: 3\n"), None,
                                  "replay", base_url=url))
    assert replayed.status is Status.PASS and replayed.repeats is not None
    assert replayed.repeats.samples == 3


def test_repeat_auto_stops_steady_evals_early_and_tops_up_flaky_ones(tmp_path: Path) -> None:
    steady = EVAL.replace("capital", "steady")
    with ScriptedServer() as server:
        _three_of_five(server)
        server.add_rule("Paris", contains="steady")
        metadata = "  repeat: auto\n  max_repeat: 14\n"
        report = run_text(tmp_path, suite_yaml(EVAL + steady, metadata), server)
    flaky, calm = report.suites[0].evals
    assert flaky.repeats is not None and calm.repeats is not None
    assert (flaky.repeats.samples, flaky.repeats.samples_saved) == (14, 0)
    assert calm.repeats.adaptive
    assert (calm.repeats.samples, calm.repeats.samples_saved) == (10, 4)


def test_repeat_setting_overrides_the_suite(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.default_reply = "Paris"
        report = run_text(tmp_path, suite_yaml(EVAL, "  repeat: 4\n"), server, repeat=2)
    assert only_eval(report).repeats is not None
    assert len(only_eval(report).samples) == 2


def test_repeat_action_input_and_command_line_option_are_validated() -> None:
    import argparse

    from turncheck.cli.run_cmd import repeat_setting
    from turncheck.github.inputs import InputError, read_inputs

    assert read_inputs({"INPUT_REPEAT": "auto"}).repeat == "auto"
    assert read_inputs({"INPUT_REPEAT": "7"}).repeat == 7
    assert read_inputs({}).repeat is None
    with pytest.raises(InputError, match="input repeat"):
        read_inputs({"INPUT_REPEAT": "0"})
    assert repeat_setting("auto") == "auto" and repeat_setting("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"1\.\.100"):
        repeat_setting("many")


def test_protocol_suites_accept_repeat_without_a_warning() -> None:
    from tests.support.protocol_helpers import PROTOCOL
    from turncheck.formats.suite_loader import parse_suite

    loaded = parse_suite(PROTOCOL.format(extra="  repeat: 3\n  min_pass: 2\n"),
                         "gating.eval.yaml")
    assert loaded.protocol is not None
    assert loaded.diagnostics == []
    assert (loaded.protocol.metadata.repeat, loaded.protocol.metadata.min_pass) == (3, 2)


def test_errored_samples_are_not_counted_in_the_repeat_summary() -> None:
    from turncheck.engine.repeats import RepeatPlan, combine
    from turncheck.report.run import EvalResult
    from turncheck.report.spend import Usage

    def sample(status: Status) -> EvalResult:
        return EvalResult(name="e", prompt="p", status=status,
                          passed_on_turn=1 if status is Status.PASS else None,
                          error="HTTP 503" if status is Status.ERROR else None, usage=Usage(),
                          cost_usd=None, judge_usage=Usage(), judge_cost_usd=None)

    result = combine([sample(Status.PASS)] * 3 + [sample(Status.ERROR)] * 2,
                     RepeatPlan(5, 5, None), None)
    summary = result.repeats
    assert summary is not None
    # 3 of 3 usable samples passed: the two provider errors say nothing about the model.
    assert (summary.passes, summary.samples, summary.unusable) == (3, 3, 2)
    assert summary.pass_hat_n and not summary.flaky and summary.pass_rate == 1.0
    assert summary.turn_of_pass == {"1": 3}
    assert result.status is Status.PASS


def test_repeat_auto_run_alone_tops_a_flaky_eval_up_to_thirty_by_default(tmp_path: Path
                                                                         ) -> None:
    # A side sampled alone (`turncheck run`, a head against main's stored runs) takes
    # max_repeat 30 unless the suite sets it; both sides together take 60 (test_diff_cmd).
    with ScriptedServer() as server:
        _three_of_five(server)
        report = run_text(tmp_path, suite_yaml(EVAL, "  repeat: auto\n"), server)
    [flaky] = report.suites[0].evals
    assert flaky.repeats is not None
    assert (flaky.repeats.samples, flaky.repeats.samples_saved) == (30, 0)
