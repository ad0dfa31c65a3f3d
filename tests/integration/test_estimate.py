"""`turncheck estimate`: worst case never below a real run, expected close to it."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, run_paths, suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main
from turncheck.engine.estimate import estimate, planned_samples
from turncheck.engine.pricing import Pricer
from turncheck.formats.budget import BudgetLimits
from turncheck.formats.suite_loader import load_suite
from turncheck.report.estimate import Estimate
from turncheck.report.run import Report

REPO = Path(__file__).resolve().parents[2]


def _actual_tokens(report: Report) -> dict[str, int]:
    """Tokens per suite and protocol suite (model, judge, embeddings) and per sample file
    (its grader)."""
    suites = {s.path: s.usage.total + s.judge_usage.total for s in report.suites}
    protocols = {p.path: p.usage.total + p.judge_usage.total for p in report.protocols}
    graders = {c.path: c.input_tokens + c.output_tokens for c in report.calibrations if c.graded}
    return suites | protocols | graders


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    copy = tmp_path / "examples"
    shutil.copytree(REPO / "examples", copy)
    return copy


def _replayed(examples: Path, out: Path) -> Report:
    """What recording the examples used: replaying their cassettes gives the real usage."""
    main(["run", str(examples), "--quiet", "--json", str(out)])
    return Report.model_validate_json(out.read_text())


def _estimated(examples: Path, out: Path, *extra: str) -> Estimate:
    assert main(["estimate", str(examples), "--json", str(out), *extra]) == 0
    document = json.loads(out.read_text())
    # Named as every turncheck document is.
    assert (document["kind"], document["schema_version"]) == ("estimate", 1)
    return Estimate.model_validate_json(out.read_text())


def test_worst_case_of_the_examples_covers_their_recorded_usage(
    examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _replayed(examples, tmp_path / "report.json")
    actual = _actual_tokens(report)
    assert sum(actual.values()) > 0
    result = _estimated(examples, tmp_path / "estimate.json")
    worst = {s.path: s.worst.tokens for s in result.suites}
    assert set(worst) == set(actual)
    for path, tokens in actual.items():
        assert worst[path] >= tokens, path
    assert result.worst.tokens >= sum(actual.values())
    printed = capsys.readouterr().out
    assert "Worst-case" in printed and "input tokens estimated" in printed


def test_expected_with_history_is_within_fifteen_percent(
    examples: Path, tmp_path: Path
) -> None:
    history = _replayed(examples, tmp_path / "history.json")
    again = _replayed(examples, tmp_path / "again.json")  # the run being estimated
    result = _estimated(examples, tmp_path / "estimate.json",
                        "--history", str(tmp_path / "history.json"))
    actual = sum(_actual_tokens(again).values())
    assert history.totals.evals > 0
    assert abs(result.expected.tokens - actual) <= 0.15 * actual
    assert all(s.expected_source == "history" for s in result.suites)


def _growing_suite() -> str:
    """Answers of known length; follow-ups fire for odd evals."""
    body = "".join(
        f"  - prompt: question {i} words please\n"
        f"    checks:\n"
        f"      - match: '*DONE*'\n"
        f"        prompt: again {i}\n"
        f"        checks: [{{match: '*DONE*'}}]\n"
        for i in range(12)
    )
    return suite_yaml(body, metadata="  max_output_tokens: 30\n")


def _scripted(server: ScriptedServer, seed: int) -> None:
    """Answer lengths vary by up to ±10 % from run to run (seeded)."""
    rng = random.Random(seed)

    def reply(body: dict[str, object]) -> str:
        messages = body["messages"]
        assert isinstance(messages, list)
        users = [m["content"] for m in messages if m["role"] == "user"]
        number = int(users[0].split()[1])
        done = number % 2 == 0 or len(users) > 1
        words = round((10 + number) * rng.uniform(0.9, 1.1))
        return ("DONE " if done else "no ") + "word " * words

    server.reset()
    server.add_rule(reply, when=lambda body: "messages" in body)


def test_estimate_brackets_a_live_run_and_its_worst_case_as_budget_never_stops_it(
    tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    path = write_suite(tmp_path, _growing_suite())
    _scripted(scripted_server, seed=1)
    first = run_paths([path], scripted_server)
    _scripted(scripted_server, seed=2)
    second = run_paths([path], scripted_server)
    assert second.totals.usage != first.totals.usage  # the history is not the run itself
    pricer = Pricer.at(first.price_source.timestamp)
    result = estimate([load_suite(path)], pricer, first, base_url=scripted_server.base_url)
    actual_cost = second.totals.cost_usd
    assert actual_cost is not None and result.expected.total_cost_usd is not None
    assert result.worst.tokens >= second.totals.usage.total
    assert result.worst.total_cost_usd is not None
    assert result.worst.total_cost_usd >= actual_cost
    assert abs(result.expected.total_cost_usd - actual_cost) <= 0.15 * actual_cost
    # A budget of exactly the worst case never stops the run.
    limits = BudgetLimits(max_cost_usd=result.worst.total_cost_usd,
                          max_live_tokens=result.worst.tokens)
    _scripted(scripted_server, seed=3)
    capped = run_paths([path], scripted_server, budget=limits)
    assert not capped.budget_stopped and capped.totals.passed == second.totals.passed


def test_worst_case_takes_the_costliest_follow_up_path(tmp_path: Path) -> None:
    short = suite_yaml("  - prompt: q\n    checks: [{match: x}]\n",
                       metadata="  max_output_tokens: 100\n")
    deep = suite_yaml(
        "  - prompt: q\n    checks:\n      - match: x\n        prompt: f1\n"
        "        checks:\n          - match: x\n            prompt: f2\n"
        "            checks: [{match: x}]\n      - prompt: s\n        checks: [{match: x}]\n",
        metadata="  max_output_tokens: 100\n")
    pricer = Pricer.at("2025-06-01T00:00:00Z")
    one = estimate([load_suite(write_suite(tmp_path, short, "a.eval.yaml"))], pricer)
    three = estimate([load_suite(write_suite(tmp_path, deep, "b.eval.yaml"))], pricer)
    assert one.worst.usage.output_tokens == 100
    assert three.worst.usage.output_tokens == 300  # three turns on the deepest path
    # Turn 3 resends both earlier answers: input grows by at least 2 × 100 tokens.
    assert three.worst.usage.input_tokens >= 3 * one.worst.usage.input_tokens + 300


def test_worst_case_of_scripted_turns_sends_every_turn_after_the_worst_path(
        tmp_path: Path) -> None:
    # Turn 1 may take a follow-up (two answers); turn 2 is sent after both.
    scripted = suite_yaml(
        "  - turns:\n"
        "      - prompt: q\n"
        "        checks:\n          - match: x\n            prompt: f1\n"
        "            checks: [{match: x}]\n"
        "      - prompt: next\n        checks: [{match: x}]\n",
        metadata="  max_output_tokens: 100\n")
    short = suite_yaml("  - prompt: q\n    checks: [{match: x}]\n",
                       metadata="  max_output_tokens: 100\n")
    pricer = Pricer.at("2025-06-01T00:00:00Z")
    one = estimate([load_suite(write_suite(tmp_path, short, "a.eval.yaml"))], pricer)
    three = estimate([load_suite(write_suite(tmp_path, scripted, "b.eval.yaml"))], pricer)
    assert three.worst.usage.output_tokens == 300
    assert three.worst.usage.input_tokens >= 3 * one.worst.usage.input_tokens + 300


def test_judge_and_embedding_calls_are_in_the_worst_case(tmp_path: Path) -> None:
    text = suite_yaml(
        "  - prompt: q\n    checks:\n      - llm_judge: {criteria: polite}\n"
        "      - semantic: {expected: hello there, threshold: 0.5}\n",
        metadata="  max_output_tokens: 50\n")
    result = estimate([load_suite(write_suite(tmp_path, text))], Pricer.at(None))
    assert result.worst.judge_usage.output_tokens == 256
    assert result.worst.judge_usage.input_tokens > 50 + 50  # conversation + answer + embedding
    assert result.worst.judge_cost_usd is not None and result.worst.judge_cost_usd > 0


def test_planned_samples_is_one_until_repeats_exist(tmp_path: Path) -> None:
    text = suite_yaml("  - prompt: q\n    checks: [{match: x}]\n")
    suite = load_suite(write_suite(tmp_path, text))
    assert suite.suite is not None
    assert planned_samples(suite.suite) == 1
    assert planned_samples(suite.suite, 3) == 3
    tripled = estimate([suite], Pricer.at(None), repeat=3)
    single = estimate([suite], Pricer.at(None))
    assert tripled.worst.tokens == 3 * single.worst.tokens


def test_estimate_json_and_bad_history_is_a_usage_error(
    examples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    assert main(["estimate", str(examples), "--history", str(bad)]) == 2
    assert "not a turncheck run report" in capsys.readouterr().err
    out = tmp_path / "e.json"
    assert main(["estimate", str(examples), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert {"suites", "worst", "expected", "price_source"} <= set(data)


def test_exact_tokenizer_is_used_only_when_its_encodings_are_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tiktoken (optional) counts OpenAI models exactly, but only from a local cache:
    a stand-in module records whether turncheck ever asked it for an encoding."""
    import sys
    import types

    from turncheck.engine import tokens

    asked: list[str] = []

    class Encoding:
        def encode(self, text: str, disallowed_special: object = ()) -> list[int]:
            return [0] * len(text.split())

    def encoding_for_model(model: str) -> Encoding:
        asked.append(model)
        return Encoding()

    fake = types.ModuleType("tiktoken")
    fake.encoding_for_model = encoding_for_model  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    monkeypatch.setattr(tokens, "_encoders", {})
    monkeypatch.delenv(tokens.TOKENIZER_ENV, raising=False)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    text = "one two three four"
    bound = tokens.input_token_bound("gpt-4o-mini", [text])
    assert asked == [] and bound == len(text.encode()) + 20  # bytes + overhead, no fetch
    assert not tokens.counted_exactly("gpt-4o-mini")

    monkeypatch.setattr(tokens, "_encoders", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens.input_token_bound("openai/gpt-4o-mini", [text]) == 4 + 20
    assert asked == ["gpt-4o-mini"] and tokens.counted_exactly("gpt-4o-mini")
