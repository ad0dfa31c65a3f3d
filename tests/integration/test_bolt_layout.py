"""Bolt Foundry's older sample layout (`userMessage` / `assistantResponse`) loads and grades.

It is a layout, not a typo: each sample becomes a user and an assistant message, and the
file gets one warning saying how to migrate, instead of three errors per sample and
"did you mean "messages"?".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from turncheck.cli.main import main
from turncheck.formats.sample_loader import load_samples, parse_samples

BOLT = Path(__file__).parents[1] / "fixtures" / "compat" / "bolt-foundry"
FILES = {"fastpitch-sources.deck.toml": 15, "hello-world-sources.deck.toml": 5}


@pytest.mark.parametrize(("name", "count"), FILES.items())
def test_the_bolt_files_load_every_sample_with_one_warning(name: str, count: int) -> None:
    loaded = load_samples(BOLT / name)
    assert len(loaded.samples) == count and loaded.skipped == 0
    [warning] = loaded.diagnostics
    assert (warning.severity.value, warning.code) == ("warning", "older-layout")
    assert "[[samples.<id>.messages]]" in warning.message  # how to migrate
    first = loaded.samples[0]
    assert [m.role for m in first.messages] == ["user", "assistant"]


def test_a_sample_keeps_its_score_and_description() -> None:
    loaded = load_samples(BOLT / "fastpitch-sources.deck.toml")
    watt = next(s for s in loaded.samples if s.id == "watt-contract-holdout")
    assert watt.expected.score == -1
    assert watt.messages[1].content == "T.J. Watt wants more money from Steelers."
    assert watt.description is not None and watt.description.startswith("The tone is great")


def test_an_older_layout_sample_without_its_answer_is_an_error_at_that_sample() -> None:
    text = ('[samples.ok]\nuserMessage = "hi"\nassistantResponse = "hello world"\nscore = 3\n\n'
            '[samples.no-answer]\nuserMessage = "hi"\nscore = -3\n')
    loaded = parse_samples(text, "x.samples.toml")
    assert [s.id for s in loaded.samples] == ["ok"]
    codes = [(d.line, d.code) for d in loaded.diagnostics]
    assert (6, "invalid-sample") in codes and (1, "older-layout") in codes
    assert any("assistantResponse" in d.message for d in loaded.diagnostics)


def _grader(url: str) -> str:
    return (f'\n[grader]\nmodel = "gpt-4o-mini"\nprovider = "openai"\nbase_url = "{url}"\n'
            'criteria = "Score the headline or greeting."\n')


@pytest.mark.parametrize("name", FILES)
def test_the_bolt_files_grade(
    name: str, tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = tmp_path / name
    path.write_text((BOLT / name).read_text(encoding="utf-8") + _grader(scripted_server.base_url),
                    encoding="utf-8")
    scripted_server.add_rule(json.dumps({"score": 0, "reason": "mixed"}))
    report = tmp_path / "report.json"
    code = main(["calibrate", str(path), "--mode", "live", "--json", str(report), "--quiet"])
    assert code in (0, 1)  # 1: agreement may be low; every sample must still be graded
    [graded] = json.loads(report.read_text(encoding="utf-8"))["calibrations"]
    rows = graded["samples"]
    assert len(rows) == FILES[name] and all(row["error"] is None for row in rows)
    assert all(row["score"] == 0 for row in rows)
    sent = [str(r.json["messages"]) for r in scripted_server.requests]
    answer = load_samples(BOLT / name).samples[0].messages[1].content or ""
    assert any(answer in text for text in sent)  # the assistantResponse reached the grader
