"""A judge that copies the prompt's placeholder ("one short sentence") gave no reason.

Small models often answer turncheck's judge prompt with the format's own words as the
reason; reports must say that no reason was given instead of showing the placeholder.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, FAST_RETRIES, only_eval, run_text, suite_yaml
from tests.support.protocol_helpers import run_protocol_files, write_protocol
from tests.support.scripted_server import Json, ScriptedServer
from turncheck.engine.judge import parse_grade, parse_verdict
from turncheck.engine.runner import run_suite_files
from turncheck.engine.scorers.judge_scale import parse_rating
from turncheck.engine.settings import RunSettings
from turncheck.formats.sample_loader import load_samples

COPIED = "no reason given (the judge copied the prompt's placeholder)"


@pytest.mark.parametrize("reason", ["one short sentence", "<one short sentence>",
                                    " One short sentence. ", "str", "string", "<reason>"])
def test_a_placeholder_reason_is_no_reason(reason: str) -> None:
    verdict = parse_verdict(json.dumps({"pass": True, "reason": reason}))
    assert verdict.passed and verdict.reason.startswith("no reason given (the judge copied")
    assert parse_grade(json.dumps({"score": 1, "reason": reason})).reason.startswith(
        "no reason given (the grader copied")
    assert parse_rating(json.dumps({"score": 2, "reason": reason}))[1].startswith(
        "no reason given (the judge copied")


def test_a_blank_reason_is_no_reason_and_a_real_one_is_kept() -> None:
    assert parse_verdict('{"pass": false, "reason": "  "}').reason == "no reason given"
    real = "It answers in one short sentence, as asked."
    assert parse_verdict(json.dumps({"pass": True, "reason": real})).reason == real


def _judge(body: Json) -> bool:
    return "turncheck-judge" in str(body.get("messages", [{}])[0].get("content", ""))


def test_an_llm_judge_check_shows_no_reason_not_the_placeholder(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule('{"pass": true, "reason": "one short sentence"}', when=_judge)
    scripted_server.add_rule("Hello, how can I help?")
    suite = suite_yaml("  - {prompt: hi, checks: [{llm_judge: {criteria: polite}}]}\n")
    [check] = only_eval(run_text(tmp_path, suite, scripted_server)).turns[0].checks
    assert check.passed
    assert check.detail == f'llm_judge "polite": {COPIED}'


def test_a_judge_scale_scorer_shows_no_reason_not_the_placeholder(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule('{"score": 4, "reason": "<one short sentence>"}', when=_judge)
    scripted_server.add_rule("An answer.")
    text = ("metadata: {name: p, model: gpt-4o-mini}\n"
            "cases: [{id: one}]\n"
            "turns:\n"
            "  - id: only\n"
            "    prompt: Say something.\n"
            "    scorers: [{judge_scale: {rubric: Clear.}}]\n")
    report = run_protocol_files([write_protocol(tmp_path, text=text)], scripted_server)
    [scorer] = report.protocols[0].cases[0].turns[0].scorers
    assert scorer.detail == f"rated 4/5: {COPIED}"


def test_a_grader_row_shows_no_reason_not_the_placeholder(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule('{"score": 3, "reason": "one short sentence"}')
    path = tmp_path / "grader.samples.toml"
    path.write_text(f"""[grader]
model = "gpt-4o-mini"
provider = "openai"
base_url = "{scripted_server.base_url}"
criteria = "Polite."

[[samples]]
id = "s1"
messages = [{{ role = "user", content = "hi" }}, {{ role = "assistant", content = "Hello!" }}]
expected = {{ score = 3 }}
""", encoding="utf-8")
    settings = RunSettings(mode="live", session=FAST_RETRIES, env={"OPENAI_API_KEY": FAKE_KEY})
    report = asyncio.run(run_suite_files([], settings, [], samples=[load_samples(path)]))
    [row] = report.calibrations[0].samples
    assert (row.score, row.reason) == (
        3, "no reason given (the grader copied the prompt's placeholder)")
