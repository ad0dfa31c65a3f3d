"""Faults, recordings and prices: the engine under realistic conditions."""

from __future__ import annotations

from pathlib import Path

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from tests.support.engine_helpers import (
    FAKE_KEY,
    SessionSettings,
    only_eval,
    run_paths,
    run_text,
    suite_yaml,
    write_suite,
)
from tests.support.scripted_server import ScriptedServer
from turncheck.engine.pricing import Pricer
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.results import Status
from turncheck.report.run import Report

MANY = 200


def many_evals(count: int) -> str:
    return "".join(
        f"  - name: e{i}\n    prompt: 'item {i}'\n    checks: [{{match: '*ok*'}}]\n"
        for i in range(count)
    )


def test_faults_on_a_fifth_of_calls_still_give_every_eval_a_status(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.hang_seconds = 3.0
    scripted_server.add_rule(fault="server_error", contains="item 7'")  # never recovers
    scripted_server.add_rule(fault="server_error", pattern=r"^item 7$")
    scripted_server.add_rule("ok")
    scripted_server.set_faults(
        0.2, ("rate_limit", "server_error", "malformed", "drop", "hang"), seed=3
    )
    settings = SessionSettings(timeout_s=0.5, attempts=6, backoff_base_s=0.001)
    report = run_text(
        tmp_path, suite_yaml(many_evals(MANY)), scripted_server, concurrency=32, session=settings
    )
    evals = report.suites[0].evals
    assert len(evals) == MANY
    by_name = {e.name: e for e in evals}
    exhausted = by_name["e7"]
    assert exhausted.status is Status.ERROR
    assert "after 6 attempts" in (exhausted.error or "")
    others = [e for e in evals if e.name != "e7"]
    for result in others:
        assert result.status in (Status.PASS, Status.ERROR), (result.name, result.status)
        if result.status is Status.ERROR:  # unlucky: faults on every attempt
            assert "attempts" in (result.error or ""), result.error
    assert sum(e.status is Status.PASS for e in others) >= 0.95 * len(others)
    faults = len(scripted_server.requests) - MANY
    assert faults >= MANY * 0.15  # the faults really happened and were retried


def record_then_replay(tmp_path: Path, server: ScriptedServer) -> tuple[Report, Report, Path]:
    server.add_rule('{"pass": true, "reason": "fine"}', when=lambda b: "evaluator" in str(b))
    server.add_rule("The answer is 100.", turn=1)
    server.add_rule("Sorry, it is 105.", turn=2)
    text = suite_yaml(
        "  - name: multiply\n"
        "    prompt: \"What is 15 * 7? token {{secret('TC_SECRET')}}\"\n"
        "    checks:\n"
        "      - match: '*105*'\n"
        "      - prompt: Try again.\n"
        "        checks:\n"
        "          - match: '*105*'\n"
        "          - llm_judge: {criteria: admits the mistake}\n"
        "          - semantic: {expected: it is 105, threshold: 0.1}\n"
    )
    path = write_suite(tmp_path, text)
    env = {"TC_SECRET": "hunter2-SECRET-VALUE"}
    recorded = run_paths([path], server, mode="record", env=env)
    server.stop()
    replayed = run_paths([path], server, mode="replay", env=env)
    return recorded, replayed, path


def test_record_then_replay_offline_is_identical_and_leaks_nothing(tmp_path: Path) -> None:
    recorded, replayed, path = record_then_replay(tmp_path, ScriptedServer().start())
    first, second = only_eval(recorded), only_eval(replayed)
    spent = first.usage.total + first.judge_usage.total
    assert recorded.live_tokens == spent > 0  # every call went to the provider
    assert replayed.live_tokens == 0  # every call came from the cassette
    assert first.status is Status.PASS and first.passed_on_turn == 2
    assert second.model_dump(exclude={"turns"}) == first.model_dump(exclude={"turns"})
    for a, b in zip(first.turns, second.turns, strict=True):
        assert a.model_dump(exclude={"latency_ms"}) == b.model_dump(exclude={"latency_ms"})
    cassette = cassette_path_for(path).read_text(encoding="utf-8")
    report_json = replayed.model_dump_json() + recorded.model_dump_json()
    for secret in (FAKE_KEY, "hunter2-SECRET-VALUE"):
        assert secret not in cassette
        assert secret not in report_json


def test_replay_miss_is_an_error_naming_the_record_command(tmp_path: Path) -> None:
    path = write_suite(tmp_path, suite_yaml("  - {prompt: never recorded, checks: [{match: x}]}\n"))
    report = run_paths([path], None, mode="replay")
    result = only_eval(report)
    assert result.status is Status.ERROR
    # The run's --provider shaped the request, so the command keeps it.
    assert f"turncheck record --provider openai {path}" in (result.error or "")


def test_priced_model_cost_equals_genai_prices(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("ok", usage=(1234, 56))
    stamp = "2026-11-01T00:00:00Z"
    report = run_text(
        tmp_path,
        suite_yaml("  - {prompt: q, checks: [{match: ok}]}\n"),
        scripted_server,
        price_timestamp=stamp,
    )
    expected = calc_price(
        PriceUsage(input_tokens=1234, output_tokens=56),
        model_ref="gpt-4o-mini",
        genai_request_timestamp=Pricer.at(stamp).timestamp,
    ).total_price
    result = only_eval(report)
    assert result.cost_usd == float(expected) > 0
    assert result.turns[0].cost_usd == float(expected)
    assert report.totals.cost_usd == float(expected)
    assert report.price_source.timestamp == stamp


def test_unknown_model_is_unpriced_not_free(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("ok", usage=(10, 5))
    report = run_text(
        tmp_path,
        suite_yaml("  - {prompt: q, checks: [{match: ok}]}\n", model="house-model-v9"),
        scripted_server,
    )
    result = only_eval(report)
    assert result.cost_usd is None and result.turns[0].cost_usd is None
    assert report.totals.cost_usd is None
    assert report.totals.unpriced_models == ["house-model-v9"]
    assert result.usage.input_tokens == 10
