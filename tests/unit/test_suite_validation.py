"""Suite rules (docs/suites.md): every invalid fixture yields exactly its declared diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.expectations import assert_diagnostics
from turncheck.formats.suite import FollowUp, MatchCheck, OrGroup
from turncheck.formats.suite_loader import load_suite, parse_suite

INVALID = Path(__file__).parents[1] / "fixtures" / "invalid"
SUITE_FIXTURES = sorted(INVALID.glob("*.eval.yaml"))


@pytest.mark.parametrize("fixture", SUITE_FIXTURES, ids=lambda p: p.name)
def test_invalid_suite_fixture_reports_its_diagnostics(fixture: Path) -> None:
    loaded = load_suite(fixture, fixture.name)
    assert_diagnostics(fixture, loaded.diagnostics)


def nested_suite(levels: int) -> str:
    lines = [
        "metadata:",
        "  name: depth",
        "  model: openai/gpt-4o-mini",
        "evals:",
        "  - prompt: Start",
        "    checks:",
        '      - match: "*x*"',
    ]
    indent = "      "
    for level in range(1, levels + 1):
        lines += [
            f"{indent}- prompt: Level {level}",
            f"{indent}  checks:",
            f'{indent}    - match: "*x*"',
        ]
        indent += "    "
    return "\n".join(lines) + "\n"


def test_five_nested_levels_pass() -> None:
    loaded = parse_suite(nested_suite(5), "deep.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None and len(loaded.suite.evals) == 1


def test_six_nested_levels_fail_at_the_sixth_prompt() -> None:
    text = nested_suite(6)
    sixth = next(i for i, line in enumerate(text.splitlines(), 1) if "Level 6" in line)
    loaded = parse_suite(text, "deep.eval.yaml")
    [problem] = loaded.diagnostics
    assert (problem.code, problem.line) == ("max-depth", sixth)
    assert problem.column == text.splitlines()[sixth - 1].index("prompt") + 1
    assert loaded.suite is None


def test_configured_lower_limit_is_enforced() -> None:
    text = nested_suite(3)
    third = next(i for i, line in enumerate(text.splitlines(), 1) if "Level 3" in line)
    assert parse_suite(text, "x.eval.yaml", max_depth=3).diagnostics == []
    [problem] = parse_suite(text, "x.eval.yaml", max_depth=2).diagnostics
    assert (problem.code, problem.line) == ("max-depth", third)
    assert "at most 2 nested levels" in problem.message


def test_limit_cannot_be_raised() -> None:
    with pytest.raises(ValueError, match="between 0 and 5"):
        parse_suite(nested_suite(1), "x.eval.yaml", max_depth=6)


def test_unquoted_hint_prompt_is_a_diagnostic_not_a_traceback() -> None:
    text = (
        "metadata: {name: m, model: a/b}\n"
        "evals:\n"
        "  - prompt: What is 15 * 7?\n"
        "    checks:\n"
        "      - prompt: Hint: 15 * 7 = 10*7 + 5*7. What is the answer?\n"
        "        checks: [{match: '*105*'}]\n"
    )
    [problem] = parse_suite(text, "hint.eval.yaml").diagnostics
    assert (problem.code, problem.line, problem.column) == ("yaml-syntax", 5, 21)
    assert "must be quoted" in problem.message


def test_or_accepted_as_whole_checks_value_and_as_list_item() -> None:
    text = (
        "metadata: {name: m, model: a/b}\n"
        "evals:\n"
        "  - prompt: p\n"
        "    checks:\n"
        "      or:\n"
        "        - match: a\n"
        "        - match: b\n"
        "        - prompt: again\n"
        "          checks:\n"
        "            - or: [{match: a}, {not_match: c}]\n"
        "            - min_tokens: 1\n"
    )
    loaded = parse_suite(text, "or.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    level = loaded.suite.evals[0].checks
    assert isinstance(level, OrGroup) and len(level.members) == 2
    follow_up = level.follow_up
    assert isinstance(follow_up, FollowUp) and follow_up.line == 8
    assert isinstance(follow_up.checks, list) and isinstance(follow_up.checks[0], OrGroup)


def test_attached_follow_up_keeps_its_line() -> None:
    text = (
        "metadata: {name: m, model: a/b}\n"
        "evals:\n"
        "  - prompt: p\n"
        "    checks:\n"
        "      - match: '*105*'\n"
        "        prompt: again\n"
        "        checks: [{match: '*105*'}]\n"
    )
    loaded = parse_suite(text, "a.eval.yaml")
    assert loaded.suite is not None
    [check] = loaded.suite.evals[0].checks  # type: ignore[misc]
    assert isinstance(check, MatchCheck)
    assert check.follow_up is not None and check.follow_up.prompt == "again"
    assert loaded.suite.evals[0].line == 3


def test_bad_eval_does_not_hide_good_ones() -> None:
    text = (
        "metadata: {name: m, model: a/b}\n"
        "evals:\n"
        "  - prompt: good one\n"
        "    checks: [{match: a}]\n"
        "  - prompt: bad one\n"
        "    checks: [{mach: a}]\n"
        "  - prompt: another good one\n"
        "    checks: [{match: b}]\n"
    )
    loaded = parse_suite(text, "mixed.eval.yaml")
    assert [d.line for d in loaded.diagnostics] == [6]
    assert loaded.suite is not None
    assert [e.prompt for e in loaded.suite.evals] == ["good one", "another good one"]


def test_unknown_metadata_key_is_only_a_warning() -> None:
    loaded = parse_suite(
        "metadata: {name: m, model: a/b, team: x}\nevals: [{prompt: p, checks: [{match: a}]}]\n",
        "w.eval.yaml",
    )
    assert [d.severity.value for d in loaded.diagnostics] == ["warning"]
    assert loaded.suite is not None and not loaded.has_errors


def test_derived_names_are_unique() -> None:
    loaded = parse_suite(
        "metadata: {name: m, model: a/b}\n"
        "evals: [{prompt: p, checks: [{match: a}]}, {prompt: p, checks: [{match: b}]}]\n",
        "n.eval.yaml",
    )
    assert loaded.suite is not None
    assert [e.display_name for e in loaded.suite.evals] == ["p", "p #2"]


SCRIPTED = """\
metadata:
  name: scripted turns
  model: openai/gpt-4o-mini
evals:
  - name: travel post
    turns:
      - prompt: Compose a short travel post about Hawaii.
        checks: [{match: "*Hawaii*"}]
      - prompt: Rewrite it starting every sentence with the letter A.
        checks:
          - match: "A*"
            prompt: Every sentence, please.
            checks: [{match: "A*"}]
"""


def test_scripted_turns_load_in_order_with_their_lines_and_follow_ups() -> None:
    loaded = parse_suite(SCRIPTED, "turns.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    [evaluation] = loaded.suite.evals
    assert evaluation.turns is not None and evaluation.prompt is None
    assert [(t.prompt[:7], t.line) for t in evaluation.turns] == [("Compose", 7), ("Rewrite", 9)]
    assert (evaluation.display_name, evaluation.line) == ("travel post", 7)
    [check] = evaluation.turns[1].checks
    assert isinstance(check, MatchCheck) and check.follow_up is not None


def test_an_unnamed_scripted_eval_is_named_by_its_first_prompt() -> None:
    loaded = parse_suite(SCRIPTED.replace("  - name: travel post\n    turns:", "  - turns:"),
                         "turns.eval.yaml")
    assert loaded.suite is not None
    assert loaded.suite.evals[0].display_name == "Compose a short travel post about Hawaii."


def test_the_published_schema_takes_one_form_of_eval() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    yaml = pytest.importorskip("yaml")
    schema_path = Path(__file__).parents[2] / "schema" / "suite.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    suite = yaml.safe_load(SCRIPTED)
    jsonschema.validate(suite, schema)
    suite["evals"][0]["prompt"] = "Hello"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(suite, schema)
    del suite["evals"][0]["turns"]
    with pytest.raises(jsonschema.ValidationError):  # a prompt needs its checks
        jsonschema.validate(suite, schema)


def test_a_scripted_eval_weighs_every_turn_when_shards_are_balanced() -> None:
    from turncheck.engine.sharding import expected_turns

    loaded = parse_suite(SCRIPTED, "turns.eval.yaml")
    assert loaded.suite is not None
    # Turn 1, then turn 2 and its follow-up: three answers at most.
    assert expected_turns(loaded.suite.evals[0]) == 3
