"""Protocol suites against the scripted server: variants, scores, aggregates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from tests.support.protocol_helpers import (
    ANSWERS,
    PROTOCOL,
    WEIGHTS,
    f1,
    first_user,
    run_protocol_files,
    script,
    write_protocol,
)
from tests.support.scripted_server import ScriptedServer
from turncheck.engine.protocol import correlation
from turncheck.report.protocol import CaseResult, ProtocolSuiteResult
from turncheck.report.results import Status
from turncheck.report.run import Report

ROOT = Path(__file__).resolve().parents[2]


def run_flow(tmp_path: Path, server: ScriptedServer, extra: str = "") -> ProtocolSuiteResult:
    script(server)
    report = run_protocol_files([write_protocol(tmp_path, extra)], server)
    assert report.suites == []
    [suite] = report.protocols
    return suite


def case(suite: ProtocolSuiteResult, case_id: str) -> CaseResult:
    return next(c for c in suite.cases if c.id == case_id)


def third_prompt(server: ScriptedServer, tag: str) -> str:
    for request in server.requests:
        body = request.json
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        if len(users) == 3 and f"[{tag}]" in first_user(body):
            return str(users[-1]["content"])
    raise AssertionError(f"no third turn sent for {tag}")


def test_variant_follows_the_earlier_results(tmp_path: Path,
                                             scripted_server: ScriptedServer) -> None:
    suite = run_flow(tmp_path, scripted_server)
    missing = case(suite, "misses-gate")
    hallucinated = case(suite, "hallucinates")
    clean = case(suite, "clean")
    # Turn 2 missed the critical "B cells" gate: the missing-gate variant, naming it.
    assert missing.turns[1].scorers[0].list_f1 is not None
    assert missing.turns[1].scorers[0].list_f1.missing == ["B cells"]
    assert missing.turns[2].variant == "missing_gate"
    assert third_prompt(scripted_server, "CASE-A") == (
        "MISSING: you did not include B cells. Should we add it?"
    )
    # Turn 2 added a population the panel does not have: the error-correction variant.
    assert hallucinated.turns[1].scorers[0].list_f1 is not None
    assert hallucinated.turns[1].scorers[0].list_f1.hallucinated == ["Dendritic cells"]
    assert hallucinated.turns[2].variant == "error_correction"
    assert third_prompt(scripted_server, "CASE-B") == (
        "CORRECTION: is Dendritic cells supported by the panel?"
    )
    # Nothing wrong: the default variant.
    assert clean.turns[2].variant == "edge_case"
    assert third_prompt(scripted_server, "CASE-C").startswith("EDGE:")
    assert suite.turns[2].variants == {"missing_gate": 1, "error_correction": 1, "edge_case": 1}


def test_prompts_use_earlier_turns_and_the_conversation_is_kept(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = run_flow(tmp_path, scripted_server)
    turns = case(suite, "misses-gate").turns
    assert turns[1].prompt == (
        "You listed Singlets, Live, Lymphocytes. Subpopulations of Lymphocytes?"
    )
    assert "- Lymphocytes\n  - CD3+ T cells\n  - B cells\n  - NK cells" in turns[3].prompt
    assert "- CD3+ T cells\n- B cells\n- NK cells" in turns[3].prompt  # turn 3's outline
    last = [r.json for r in scripted_server.requests
            if "[CASE-A]" in first_user(r.json) and len(r.json["messages"]) == 7]
    assert [m["role"] for m in last[0]["messages"]] == ["user", "assistant"] * 3 + ["user"]
    assert last[0]["messages"][1]["content"] == ANSWERS["CASE-A"][1]


def test_weighted_aggregates_equal_a_hand_computation(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = run_flow(tmp_path, scripted_server)
    result = case(suite, "misses-gate")
    # By hand, from the scripted answers (see tests/support/protocol_helpers.py):
    gates = f1(3 / 3, 3 / 4)  # Singlets, Live, Lymphocytes of 4 first-level gates
    subsets = f1(2 / 2, 2 / 3)  # T cells (CD3+) and NK cells of 3
    constraint = 1.0  # "I revised it" matches *revised*
    estimate = 1 - abs(0.70 - subsets)  # said 70%, measured the turn-2 F1
    ack = (4 - 1) / 4  # the judge rated 4 of 5
    scores = {"gates": gates, "subsets": subsets, "constraint": constraint,
              "estimate": estimate, "ack": ack}
    expected = sum(WEIGHTS[k] * scores[k] for k in WEIGHTS) / sum(WEIGHTS.values())
    assert result.status is Status.PASS
    assert result.aggregates.interactive_reasoning == pytest.approx(expected, abs=1e-12)
    assert [t.score for t in result.turns] == pytest.approx(
        [gates, subsets, constraint, (0.15 * estimate + 0.15 * ack) / 0.3]
    )
    # The weight-0 "revised" scorer is reported but does not count.
    revised = result.turns[2].scorers[1]
    assert (revised.id, revised.weight, revised.score) == ("revised", 0.0, 1.0)
    assert result.aggregates.final_f1 == pytest.approx(subsets)
    assert result.aggregates.self_correction == pytest.approx(1.0 - subsets)
    assert result.aggregates.self_assessment_estimate == pytest.approx(0.70)
    assert result.aggregates.self_assessment_actual == pytest.approx(subsets)
    all_irs = [c.aggregates.interactive_reasoning for c in suite.cases]
    assert suite.aggregates.interactive_reasoning == pytest.approx(
        sum(v for v in all_irs if v is not None) / 3
    )


def test_self_assessment_correlation_over_cases_equals_numpy(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = run_flow(tmp_path, scripted_server)
    estimates = [0.70, 0.50, 0.90]
    measured = [f1(1, 2 / 3), f1(3 / 4, 1), f1(1, 1)]
    by_case = [case(suite, c) for c in ("misses-gate", "hallucinates", "clean")]
    assert [c.aggregates.self_assessment_estimate for c in by_case] == pytest.approx(estimates)
    assert [c.aggregates.self_assessment_actual for c in by_case] == pytest.approx(measured)
    expected = numpy.corrcoef(estimates, measured)[0, 1]
    assert suite.aggregates.meta_cognition == pytest.approx(float(expected), abs=1e-12)
    assert suite.aggregates.meta_cognition_cases == 3


def test_usage_and_cost_per_turn_and_judge_apart(tmp_path: Path,
                                                 scripted_server: ScriptedServer) -> None:
    suite = run_flow(tmp_path, scripted_server)
    result = case(suite, "clean")
    assert all(t.usage.output_tokens > 0 and t.cost_usd is not None for t in result.turns)
    assert result.turns[3].judge_usage.total > 0  # the judge_scale call
    assert result.turns[0].judge_usage.total == 0
    assert result.usage == sum((t.usage for t in result.turns), type(result.usage)())
    assert result.judge_usage == result.turns[3].judge_usage
    assert suite.usage.total == sum(c.usage.total for c in suite.cases)


def test_judge_error_makes_only_that_case_an_error(tmp_path: Path,
                                                   scripted_server: ScriptedServer) -> None:
    script(scripted_server, ratings={"CASE-A": "I think it is fine", "CASE-B": 7, "CASE-C": 5})
    report = run_protocol_files([write_protocol(tmp_path)], scripted_server)
    [suite] = report.protocols
    a, b, c = (case(suite, i) for i in ("misses-gate", "hallucinates", "clean"))
    assert a.status is Status.ERROR and "judge answer is not JSON" in (a.error or "")
    assert b.status is Status.ERROR and "from 1 to 5, got 7" in (b.error or "")
    ack = a.turns[3].scorers[1]
    assert ack.score is None and ack.error  # never a score
    assert a.aggregates.interactive_reasoning is None
    assert c.status is Status.PASS and c.aggregates.interactive_reasoning is not None
    assert suite.aggregates.errors == 2 and suite.aggregates.passed == 1


def test_pass_threshold_fails_low_cases(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    suite = run_flow(tmp_path, scripted_server, extra="  pass_threshold: 0.85\n")
    statuses = {c.id: c.status for c in suite.cases}
    scores = {c.id: c.aggregates.interactive_reasoning for c in suite.cases}
    for case_id, status in statuses.items():
        value = scores[case_id]
        assert value is not None
        assert status is (Status.PASS if value >= 0.85 else Status.FAIL)
    assert Status.FAIL in statuses.values() and Status.PASS in statuses.values()


def test_replay_without_a_cassette_is_an_error_per_case(tmp_path: Path) -> None:
    report = run_protocol_files([write_protocol(tmp_path)], None, mode="replay")
    [suite] = report.protocols
    assert [c.status for c in suite.cases] == [Status.ERROR] * 3
    assert all("turncheck record" in (c.error or "") for c in suite.cases)


def test_record_then_replay_gives_the_same_results(tmp_path: Path,
                                                   scripted_server: ScriptedServer) -> None:
    script(scripted_server)
    path = write_protocol(tmp_path)
    recorded = run_protocol_files([path], scripted_server, mode="record")
    assert (tmp_path / "gating.eval.cassette.yaml").is_file()
    sent = len(scripted_server.requests)
    replayed = run_protocol_files([path], None, mode="replay", base_url=scripted_server.base_url)
    assert len(scripted_server.requests) == sent  # nothing reached the server

    def outcome(report: Report) -> list[object]:
        return [(c.status, c.aggregates, [(t.variant, t.response, t.score) for t in c.turns])
                for c in report.protocols[0].cases]

    assert outcome(replayed) == outcome(recorded)
    assert replayed.protocols[0].cassette == path.with_name("gating.eval.cassette.yaml").as_posix()


def test_a_case_whose_template_fails_at_run_time_errors_alone(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    text = (
        "metadata: {name: partial, model: gpt-4o-mini}\n"
        "cases:\n"
        "  - {id: with, vars: {tag: '[CASE-A]', extra: hi}}\n"
        "  - {id: without, vars: {tag: '[CASE-B]'}}\n"
        "turns:\n"
        "  - id: only\n"
        "    prompt: \"{{ case.vars.tag }} {{ case.vars.extra }}\"\n"
        "    scorers: [{match: '*'}]\n"
    )
    path = write_protocol(tmp_path, text=text)
    from turncheck.formats.suite_loader import load_suite

    warnings = load_suite(path).diagnostics
    assert [(d.severity.value, d.code, d.line) for d in warnings] == [
        ("warning", "missing-case-value", 7)
    ]
    report = run_protocol_files([path], scripted_server)
    with_it, without = report.protocols[0].cases
    assert with_it.status is Status.PASS
    assert without.status is Status.ERROR
    assert 'turn "only" prompt' in (without.error or "") and "extra" in (without.error or "")


def test_secrets_in_templates_are_redacted(tmp_path: Path, scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(lambda body: "echo: " + first_user(body))
    text = (
        "metadata: {name: secret, model: gpt-4o-mini}\n"
        "cases: [{id: one}]\n"
        "turns:\n"
        "  - id: ask\n"
        "    prompt: \"token {{ secret('PROTO_TOKEN') }}\"\n"
    )
    report = run_protocol_files([write_protocol(tmp_path, text=text)], scripted_server,
                                env={"PROTO_TOKEN": "s3cr3t-value"})
    dumped = report.model_dump_json()
    assert "s3cr3t-value" not in dumped and "[REDACTED]" in dumped
    assert scripted_server.requests[0].json["messages"][0]["content"] == "token s3cr3t-value"


def test_cli_runs_protocols_reports_json_and_exits_by_threshold(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    path = write_protocol(tmp_path, extra="  pass_threshold: 0.99\n")
    report_path = tmp_path / "report.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    env.pop("GITHUB_ACTIONS", None)
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", str(path), "--mode", "live", "--base-url",
         scripted_server.base_url, "--json", str(report_path)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 1, done.stdout + done.stderr  # cases below the threshold
    assert "Case 1: misses-gate" in done.stdout
    assert "3 refinement  missing_gate" in done.stdout
    assert "Meta-cognition (r), self-assessment vs measured over 3 cases: r = " in done.stdout
    data = json.loads(report_path.read_text())
    assert data["suites"] == []
    [protocol] = data["protocols"]
    assert [c["id"] for c in protocol["cases"]] == ["misses-gate", "hallucinates", "clean"]
    turn = protocol["cases"][0]["turns"][1]
    assert turn["id"] == "expansion" and turn["scorers"][0]["list_f1"]["missing"] == ["B cells"]


def test_cli_exit_is_zero_when_every_case_completes(tmp_path: Path,
                                                     scripted_server: ScriptedServer) -> None:
    script(scripted_server)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", str(write_protocol(tmp_path)), "--mode",
         "live", "--base-url", scripted_server.base_url, "--quiet"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Case 1" not in done.stdout  # --quiet: the tables only
    assert done.stdout.splitlines()[0].startswith("Protocol")


def test_invalid_template_is_reported_before_any_call(tmp_path: Path,
                                                      scripted_server: ScriptedServer) -> None:
    text = PROTOCOL.format(extra="").replace("{{ turns.initial.items", "{{ turns.reflection.items")
    path = write_protocol(tmp_path, text=text)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "run", str(path), "--mode", "live", "--base-url",
         scripted_server.base_url],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    line = next(i for i, text in enumerate(text.splitlines(), 1) if "turns.reflection" in text)
    assert f"gating.eval.yaml:{line}:" in done.stderr
    assert 'turn "reflection" (line' in done.stderr and "comes later" in done.stderr
    assert scripted_server.requests == []


def test_the_example_replays_offline_and_picks_variants_from_turn_two() -> None:
    from turncheck.formats.hierarchy import intersect

    example = ROOT / "examples" / "flow-gating" / "flow-gating.eval.yaml"
    report = run_protocol_files([example], None, mode="replay", env={}, base_url=None,
                                provider=None)
    [suite] = report.protocols
    assert [c.id for c in suite.cases] == ["t-cell-memory", "b-cell-maturation", "nk-monocyte"]
    assert suite.cassette is not None and suite.cassette.endswith("flow-gating.eval.cassette.yaml")
    for result in suite.cases:
        assert "no recording" not in (result.error or ""), result.error
        assert [t.id for t in result.turns] == ["initial", "expansion", "refinement",
                                                "reflection"]
        subsets = result.turns[1].scorers[0].list_f1
        assert subsets is not None
        critical = {"t-cell-memory": ["CD4+ T cells", "CD8+ T cells", "Regulatory T cells"],
                    "b-cell-maturation": ["Naive B cells", "Switched memory B cells",
                                          "Plasmablasts"],
                    "nk-monocyte": ["NK cells", "Monocytes", "Classical monocytes"]}[result.id]
        expected = ("missing_gate" if intersect(subsets.missing, critical)
                    else "error_correction" if subsets.hallucinated else None)
        if expected is not None:
            assert result.turns[2].variant == expected
        assert all(t.usage.output_tokens > 0 for t in result.turns)


def test_shard_reports_merge_with_their_protocols(tmp_path: Path,
                                                  scripted_server: ScriptedServer) -> None:
    from turncheck.engine.merge import merge_reports
    from turncheck.report.run import ShardInfo

    script(scripted_server)
    report = run_protocol_files([write_protocol(tmp_path)], scripted_server)
    first = report.model_copy(update={"protocols": [],
                                      "shard": ShardInfo(index=1, count=2, plan="p")})
    second = report.model_copy(update={"shard": ShardInfo(index=2, count=2, plan="p")})
    merged = merge_reports([("a.json", first), ("b.json", second)])
    assert merged.protocols == report.protocols and merged.shard is None


@pytest.mark.parametrize("estimates", [[0.1, 0.1, 0.1], [10 / 100, 0.1, 1 / 10]])
def test_meta_cognition_is_undefined_when_every_estimate_is_the_same(
    estimates: list[float],
) -> None:
    # Three cases that each said "10%": statistics.correlation alone returns -0.0 here
    # (its mean of 0.1s is not exactly 0.1), which the console printed as "r = -0.000".
    r, note = correlation(estimates, [0.17, 0.0, 0.0])
    assert r is None
    assert note == "undefined: the estimates or the measured scores are all equal"
    assert correlation([0.2, 0.5, 0.9], [0.3, 0.3, 0.3]) == (None, note)
    assert correlation([0.2, 0.5, 0.9], [0.1, 0.4, 0.9])[0] == pytest.approx(
        float(numpy.corrcoef([0.2, 0.5, 0.9], [0.1, 0.4, 0.9])[0, 1]))
