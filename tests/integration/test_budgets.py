"""Hard budgets (docs/budgets.md): live calls never spend more than allowed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine_helpers import FAKE_KEY, run_paths, suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main
from turncheck.compare.comparison import compare_reports
from turncheck.formats.budget import BudgetLimits
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.results import Status
from turncheck.report.run import Report

EVALS = 50
REPO = Path(__file__).resolve().parents[2]


def _three_turn_suite(evals: int = EVALS, checks_extra: str = "") -> str:
    """Each eval passes on turn 1, 2 or 3 (by its number): up to 3 turns each."""
    body = "".join(
        f"  - prompt: question {i} please\n"
        f"    checks:\n"
        f"      - match: '*DONE*'{checks_extra}\n"
        f"        prompt: try again {i}\n"
        f"        checks:\n"
        f"          - match: '*DONE*'\n"
        f"            prompt: last try {i}\n"
        f"            checks: [{{match: '*DONE*'}}]\n"
        for i in range(evals)
    )
    return suite_yaml(body, metadata="  max_output_tokens: 20\n  threads: 8\n")


def _script(server: ScriptedServer) -> None:
    """Eval i passes on turn (i % 3) + 1; replies stay under max_output_tokens."""

    def reply(body: dict[str, Any]) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        number = int(users[0].split()[1])
        return "DONE here it is" if len(users) > number % 3 else "not yet sorry"

    server.add_rule(reply, when=lambda body: "messages" in body)


def _cli(suite: Path, server: ScriptedServer, *extra: str, out: Path) -> int:
    return main(["run", str(suite), "--mode", "live", "--base-url", server.base_url,
                 "--quiet", "--json", str(out), "--attempts", "1", *extra])


def _model_cost(report: Report) -> float:
    return sum(t.cost_usd or 0.0 for s in report.suites for e in s.evals for t in e.turns)


def _spent_cost(report: Report) -> float:
    return sum((e.cost_usd or 0.0) + (e.judge_cost_usd or 0.0)
               for s in report.suites for e in s.evals)


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


def test_cost_budget_stops_a_live_run_at_forty_percent(
    tmp_path: Path, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _script(scripted_server)
    suite = write_suite(tmp_path, _three_turn_suite())
    assert _cli(suite, scripted_server, out=tmp_path / "full.json") == 0
    full = Report.model_validate_json((tmp_path / "full.json").read_text())
    unbudgeted = _spent_cost(full)
    assert unbudgeted > 0 and full.totals.passed == EVALS
    assert len(scripted_server.requests) == sum(len(e.turns) for e in full.suites[0].evals)

    budget = 0.4 * unbudgeted
    scripted_server.reset()
    _script(scripted_server)
    code = _cli(suite, scripted_server, "--max-cost-usd", repr(budget),
                out=tmp_path / "capped.json")
    capped = Report.model_validate_json((tmp_path / "capped.json").read_text())

    assert code == 3  # documented: the budget stopped the run and nothing failed
    assert _spent_cost(capped) <= budget
    [outcome] = capped.budgets
    assert outcome.stopped and outcome.spent_usd <= budget
    assert outcome.spent_usd == pytest.approx(_spent_cost(capped))
    evals = capped.suites[0].evals
    skipped = [e for e in evals if e.status is Status.SKIPPED]
    assert skipped and all(e.reason == "budget" for e in skipped)
    assert capped.totals.skipped == len(skipped)
    assert capped.totals.passed + capped.totals.failed + capped.totals.errors \
        + capped.totals.skipped == EVALS
    assert capped.totals.failed == capped.totals.errors == 0
    # Requests the server saw are exactly the turns reported: refused calls were never sent.
    assert len(scripted_server.requests) == sum(len(e.turns) for e in evals)

    console = capsys.readouterr().out
    assert "Budget stopped the run" in console
    comparison = compare_reports(full, capped)
    comment = comment_markdown(comparison, CommentContext(fail_reasons=[], head=capped))
    comment = comment.replace("\\", "")  # Markdown escapes
    assert "Budget stopped the run" in comment
    assert f"{len(skipped)} evals skipped (budget)" in comment
    assert "skipped (budget)" in comment  # the skipped evals are listed, as inconclusive
    assert "no change" not in comment.split("\n")[1]
    assert comparison.totals.counts.regressions == 0  # skipped is never a fail


def _judged_suite(evals: int) -> str:
    """Every turn also calls the judge and the embedding model."""
    graded = ("{indent}- llm_judge: {{criteria: is it polite}}\n"
              "{indent}- semantic: {{expected: DONE here it is, threshold: 0.0}}\n")
    body = "".join(
        f"  - prompt: question {i} please\n"
        f"    checks:\n" + graded.format(indent="      ") +
        f"      - match: '*DONE*'\n"
        f"        prompt: try again {i}\n"
        f"        checks:\n" + graded.format(indent="          ") +
        "          - match: '*DONE*'\n"
        for i in range(evals)
    )
    return suite_yaml(body, metadata="  max_output_tokens: 20\n  threads: 8\n")


def _script_with_judge(server: ScriptedServer) -> None:
    server.add_rule('{"pass": true, "reason": "fine"}', when=lambda body: "response_format" in body)
    _script(server)


def test_token_budget_counts_judge_and_embedding_calls(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    _script_with_judge(scripted_server)
    suite = write_suite(tmp_path, _judged_suite(20))
    full = run_paths([suite], scripted_server)
    assert full.totals.judge_usage.total > 0 and full.totals.errors == 0
    assert full.live_tokens > full.totals.usage.total
    assert any(r.path.endswith("/embeddings") for r in scripted_server.requests)

    budget = int(0.4 * full.live_tokens)
    scripted_server.reset()
    _script_with_judge(scripted_server)
    capped = run_paths([suite], scripted_server, budget=BudgetLimits(max_live_tokens=budget))
    spent = capped.totals.usage.total + capped.totals.judge_usage.total
    assert spent <= budget
    assert capped.live_tokens == spent == capped.budgets[0].spent_tokens
    assert capped.totals.judge_usage.total > 0
    assert capped.totals.skipped > 0 and capped.budget_stopped
    assert capped.totals.errors == 0  # a refused judge call skips the eval, no check error


def test_suite_budget_block_caps_its_own_suite_only(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    _script(scripted_server)
    capped_text = _three_turn_suite(10).replace(
        "  max_output_tokens: 20\n", "  max_output_tokens: 20\n  budget: {max_live_tokens: 150}\n")
    capped = write_suite(tmp_path, capped_text, "capped.eval.yaml")
    free = write_suite(tmp_path, _three_turn_suite(10), "free.eval.yaml")
    report = run_paths([capped, free], scripted_server)
    by_path = {Path(s.path).name: s for s in report.suites}
    capped_suite, free_suite = by_path["capped.eval.yaml"], by_path["free.eval.yaml"]
    assert capped_suite.usage.total <= 150
    assert any(e.status is Status.SKIPPED for e in capped_suite.evals)
    assert all(e.status is Status.PASS for e in free_suite.evals)
    [outcome] = report.budgets
    assert outcome.scope.endswith("capped.eval.yaml") and outcome.stopped


def test_replay_with_a_zero_budget_runs_fully_from_cassettes(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples", examples)
    plain, zero = tmp_path / "plain.json", tmp_path / "zero.json"
    code_plain = main(["run", str(examples), "--quiet", "--json", str(plain)])
    code_zero = main(["run", str(examples), "--quiet", "--json", str(zero),
                      "--max-cost-usd", "0", "--max-live-tokens", "0"])
    assert code_zero == code_plain
    before = Report.model_validate_json(plain.read_text())
    after = Report.model_validate_json(zero.read_text())
    assert after.totals.skipped == 0 and not after.budget_stopped
    assert [(e.name, e.status) for s in after.suites for e in s.evals] == \
        [(e.name, e.status) for s in before.suites for e in s.evals]
    assert after.totals.usage == before.totals.usage and after.totals.usage.total > 0
    assert [b.spent_tokens for b in after.budgets] == [0]


def test_record_with_a_zero_budget_replays_what_is_recorded(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    _script(scripted_server)
    suite = write_suite(tmp_path, _three_turn_suite(6))
    first = run_paths([suite], scripted_server, mode="record")
    assert first.totals.passed == 6
    sent = len(scripted_server.requests)
    again = run_paths([suite], scripted_server, mode="record",
                      budget=BudgetLimits(max_cost_usd=0, max_live_tokens=0))
    assert again.totals.passed == 6 and not again.budget_stopped
    assert len(scripted_server.requests) == sent  # nothing new went out
    # A new eval misses the cassette: its call would cost, so it is not sent.
    suite.write_text(_three_turn_suite(7), encoding="utf-8")
    third = run_paths([suite], scripted_server, mode="record",
                      budget=BudgetLimits(max_live_tokens=0))
    statuses = [e.status for e in third.suites[0].evals]
    assert statuses.count(Status.SKIPPED) == 1 and statuses.count(Status.PASS) == 6
    assert len(scripted_server.requests) == sent


def test_unbudgeted_json_report_gives_each_turns_cost(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    _script(scripted_server)
    suite = write_suite(tmp_path, _three_turn_suite(3))
    out = tmp_path / "r.json"
    assert _cli(suite, scripted_server, out=out) == 0
    data = json.loads(out.read_text())
    turns = [t for e in data["suites"][0]["evals"] for t in e["turns"]]
    assert len(turns) == 6
    assert all(t["cost_usd"] > 0 and t["usage"]["output_tokens"] > 0 for t in turns)
    assert all("judge_cost_usd" in t and "judge_usage" in t for t in turns)


def test_calibrate_counts_grader_calls_against_the_budget(
    tmp_path: Path, scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.integration.test_calibration import graded_text, script
    from turncheck.engine.estimate import estimate_sample_file
    from turncheck.engine.pricing import Pricer
    from turncheck.formats.sample_loader import load_samples

    script(scripted_server)
    path = tmp_path / "grader.samples.toml"
    path.write_text(graded_text(scripted_server.base_url), encoding="utf-8")
    worst = estimate_sample_file(load_samples(path), Pricer.at(None), None)
    assert worst is not None
    per_call = worst.worst.tokens / worst.evals
    budget = int(2.5 * per_call)  # room for two graders' worst cases, not three
    out = tmp_path / "r.json"
    code = main(["calibrate", str(path), "--mode", "live", "--concurrency", "8",
                 "--max-live-tokens", str(budget), "--json", str(out)])
    report = Report.model_validate_json(out.read_text())
    [result] = report.calibrations
    sent = [r for r in scripted_server.requests if r.path.endswith("/chat/completions")]
    assert len(sent) == 2 and code == 1  # refused samples are error rows
    spent = result.input_tokens + result.output_tokens
    assert spent <= budget and report.budgets[0].spent_tokens == spent
    refused = [s for s in result.samples if s.error and "budget" in s.error]
    assert len(refused) == 3
    assert "Budget stopped the run" in capsys.readouterr().out
