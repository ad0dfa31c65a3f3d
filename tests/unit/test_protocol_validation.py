"""Protocol suites are validated like eval suites: every problem at its line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.expectations import assert_diagnostics
from tests.support.protocol_helpers import PROTOCOL
from turncheck.formats.protocol import ListF1Spec, SelfAssessmentSpec
from turncheck.formats.suite import MatchCheck
from turncheck.formats.suite_loader import SuiteFile, load_suite, parse_suite

INVALID = Path(__file__).parents[1] / "fixtures" / "invalid"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flow-gating"


def problems(loaded: SuiteFile) -> list[tuple[int, int, str, str]]:
    return [(d.line, d.column, d.code, d.message) for d in loaded.diagnostics]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("fixture", sorted(INVALID.glob("protocol-*.eval.yaml")),
                         ids=lambda p: p.name)
def test_protocol_fixture_reports_its_diagnostics(fixture: Path) -> None:
    loaded = load_suite(fixture, fixture.name)
    assert_diagnostics(fixture, loaded.diagnostics)
    assert loaded.protocol is None and loaded.suite is None


def test_valid_protocol_builds_its_model() -> None:
    text = PROTOCOL.format(extra="  pass_threshold: 0.5\n")
    loaded = parse_suite(text, "gating.eval.yaml")
    assert loaded.diagnostics == []
    protocol = loaded.protocol
    assert protocol is not None and loaded.suite is None
    assert protocol.metadata.pass_threshold == 0.5
    assert [c.id for c in protocol.cases] == ["misses-gate", "hallucinates", "clean"]
    assert protocol.cases[0].ground_truth["critical"] == ["B cells", "CD3+ T cells"]
    assert [t.id for t in protocol.turns] == ["initial", "expansion", "refinement", "reflection"]
    refinement = protocol.turns[2]
    assert [(v.id, v.when is None) for v in refinement.variants] == [
        ("missing_gate", False), ("error_correction", False), ("edge_case", True)]
    assert [(s.id, s.kind, s.weight) for s in refinement.scorers] == [
        ("constraint", "match", 0.2), ("revised", "list_f1", 0)]
    assert isinstance(refinement.scorers[0].spec, MatchCheck)
    assert isinstance(refinement.scorers[1].spec, ListF1Spec)
    assert isinstance(protocol.turns[3].scorers[0].spec, SelfAssessmentSpec)
    assert refinement.line == line_of(text, "- id: refinement")
    assert str(protocol.aggregates.final_f1) == "expansion.subsets"
    assert protocol.aggregates.self_correction is not None
    assert str(protocol.aggregates.self_correction.after) == "refinement.revised"


def test_unknown_variable_in_a_block_template_is_reported_at_its_own_line() -> None:
    text = PROTOCOL.format(extra="").replace(
        "      What are the first-level gates?\n",
        "      What are the first-level gates?\n      Tissue: {{ case.vars.tissue }}\n"
        "      Before: {{ turns.nonexistent.response }}\n",
    )
    loaded = parse_suite(text, "gating.eval.yaml")
    tissue, before = line_of(text, "case.vars.tissue"), line_of(text, "turns.nonexistent")
    assert problems(loaded) == [
        (tissue, 7, "unknown-reference",
         'turn "initial" prompt: unknown variable "case.vars.tissue": no case defines it; '
         "known: sample_type, tag"),
        (before, 7, "unknown-turn",
         'turn "initial" prompt: unknown turn "nonexistent"; known: initial, expansion, '
         "refinement, reflection"),
    ]
    assert loaded.protocol is None


@pytest.mark.parametrize(
    ("template", "code", "message"),
    [
        ("{{ case.tag }}", "unknown-reference", 'unknown case field "case.tag"'),
        ("{{ turns.expansion.response }}", "turn-order", "cannot refer to its own results"),
        ("{{ turns.reflection.response }}", "turn-order", 'turn "reflection" (line'),
        ("{{ turns.initial.scores.gatez }}", "unknown-reference",
         'turn "initial" has no scorer "gatez"; did you mean "gates"?'),
        ("{{ turns.initial.extracted.count }}", "unknown-reference",
         'turn "initial" extracts no value "count"'),
        ("{{ turns['initial'].respons }}", "unknown-reference",
         'unknown field "turns.initial.respons"; did you mean "response"?'),
        ("{{ response }}", "unknown-reference", 'unknown variable "response"'),
        ("{% for x in turns.initial.items %}{{ y }}{% endfor %}", "unknown-reference",
         'unknown variable "y"'),
        ("{{ secret(case.id) }}", "invalid-template", "secret() takes one quoted name"),
        ("{{ turns.initial.items | nosuchfilter }}", "template-syntax",
         "No filter named 'nosuchfilter'"),
        ("{{ turns.initial.items ", "template-syntax", "template error"),
    ],
)
def test_template_problems(template: str, code: str, message: str) -> None:
    text = PROTOCOL.format(extra="").replace(
        "\"You listed {{ turns.initial.items | join(', ') }}. Subpopulations of Lymphocytes?\"",
        json.dumps(template),
    )
    loaded = parse_suite(text, "gating.eval.yaml")
    [problem] = loaded.diagnostics
    assert (problem.line, problem.code) == (line_of(text, json.dumps(template)), code)
    assert message in problem.message


def test_templates_that_are_fine() -> None:
    text = PROTOCOL.format(extra="").replace(
        "\"You listed {{ turns.initial.items | join(', ') }}. Subpopulations of Lymphocytes?\"",
        json.dumps(
            "{% for name in turns.initial.items %}{{ loop.index }} {{ name }}{% endfor %}"
            "{{ case.vars.sample_type | default('blood') }}{{ var('who') }}"
            "{{ turns.initial.results.gates.missing | join(', ') }}{{ case.id }}"
            "{{ secret('API_HINT') }}{{ turns['initial'].scores['gates'] }}"
        ),
    )
    loaded = parse_suite(text, "gating.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.protocol is not None and loaded.protocol.secret_names == ["API_HINT"]


def test_a_var_some_cases_lack_is_a_warning_unless_guarded() -> None:
    base = PROTOCOL.format(extra="").replace("sample_type: whole blood}", "sample_type: x, "
                                             "panel: P1}", 1)
    unguarded = parse_suite(base.replace("What are the first-level gates?",
                                         "{{ case.vars.panel }}"), "g.eval.yaml")
    assert [(d.severity.value, d.code) for d in unguarded.diagnostics] == [
        ("warning", "missing-case-value")]
    assert "misses-gate, hallucinates" in unguarded.diagnostics[0].message
    assert unguarded.protocol is not None
    guarded = parse_suite(base.replace("What are the first-level gates?",
                                       "{% if case.vars.panel is defined %}{{ case.vars.panel }}"
                                       "{% endif %}"), "g.eval.yaml")
    assert guarded.diagnostics == []
    defaulted = parse_suite(base.replace("What are the first-level gates?",
                                         "{{ case.vars.panel | default('none') }}"), "g.eval.yaml")
    assert defaulted.diagnostics == []


def test_cases_from_a_yaml_file_report_problems_in_that_file(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(
        "- id: good\n"
        "  vars: {tag: a}\n"
        "- id: bad\n"
        "  vars: [not, a, mapping]\n"
        "- id: good-too\n"
        "  vars: {tag: b}\n"
        "  ground_truht: {}\n"
        "- id: last\n",
        encoding="utf-8",
    )
    suite = tmp_path / "p.eval.yaml"
    suite.write_text(
        "metadata: {name: p, model: m}\n"
        "cases: {file: cases.yaml}\n"
        "turns: [{id: t, prompt: '{{ case.vars.tag | default(\"x\") }}'}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(suite, "p.eval.yaml")
    assert [(d.file, d.line, d.column, d.code) for d in loaded.diagnostics] == [
        ("cases.yaml", 4, 9, "invalid-value"),
        ("cases.yaml", 7, 3, "unknown-key"),
    ]
    assert 'did you mean "ground_truth"?' in loaded.diagnostics[1].message
    assert loaded.protocol is not None
    assert [c.id for c in loaded.protocol.cases] == ["good", "last"]
    assert loaded.protocol.cases_file == "cases.yaml"


def test_cases_from_a_json_file(tmp_path: Path) -> None:
    (tmp_path / "cases.json").write_text(json.dumps({"cases": [
        {"id": "one", "vars": {"tag": "x"}, "ground_truth": {"gates": ["Singlets"]}},
    ]}), encoding="utf-8")
    suite = tmp_path / "p.eval.yaml"
    suite.write_text(
        "metadata: {name: p, model: m}\n"
        "cases: {file: cases.json}\n"
        "turns:\n"
        "  - id: t\n"
        "    prompt: '{{ case.vars.tag }}'\n"
        "    scorers: [{list_f1: {expected: case.ground_truth.gates}}]\n",
        encoding="utf-8",
    )
    loaded = load_suite(suite)
    assert loaded.diagnostics == []
    assert loaded.protocol is not None and loaded.protocol.cases[0].vars == {"tag": "x"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("missing.yaml", "cannot read cases file"),
        ("cases.txt", "must end in .yaml, .yml or .json"),
        ("/etc/passwd.yaml", "must be a relative path"),
        ("link.yaml", "leads outside the suite's directory"),
    ],
)
def test_bad_cases_files(tmp_path: Path, value: str, message: str) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("- id: x\n", encoding="utf-8")
    inner = tmp_path / "suite"
    inner.mkdir()
    os.symlink(outside, inner / "link.yaml")
    suite = inner / "p.eval.yaml"
    suite.write_text(f"metadata: {{name: p, model: m}}\ncases: {{file: '{value}'}}\n"
                     "turns: [{id: t, prompt: hi}]\n", encoding="utf-8")
    loaded = load_suite(suite, "p.eval.yaml")
    [problem] = loaded.diagnostics
    assert (problem.line, problem.code) == (2, "invalid-cases-file")
    assert message in problem.message


def test_one_bad_case_never_hides_the_others() -> None:
    text = (
        "metadata: {name: p, model: m}\n"
        "cases:\n"
        "  - {id: a}\n"
        "  - {vars: {x: 1}}\n"
        "  - {id: 7}\n"
        "  - {id: b}\n"
        "turns: [{id: t, prompt: hi}]\n"
    )
    loaded = parse_suite(text, "p.eval.yaml")
    assert [(d.line, d.code) for d in loaded.diagnostics] == [(4, "missing-key"),
                                                              (5, "invalid-value")]
    assert loaded.protocol is not None and [c.id for c in loaded.protocol.cases] == ["a", "b"]


def test_scorer_and_aggregate_references_are_checked() -> None:
    text = PROTOCOL.format(extra="").replace("final_f1: expansion.subsets",
                                             "final_f1: reflection.estimate\n"
                                             "  self_assessment: nowhere.estimate")
    loaded = parse_suite(text, "gating.eval.yaml")
    assert [(d.line, d.code) for d in loaded.diagnostics] == [
        (line_of(text, "final_f1: reflection"), "invalid-reference"),
        (line_of(text, "self_assessment: nowhere"), "unknown-turn"),
    ]
    assert "is a self_assessment scorer; expected list_f1" in loaded.diagnostics[0].message


def test_the_example_protocol_is_valid() -> None:
    loaded = load_suite(EXAMPLE / "flow-gating.eval.yaml")
    assert [d for d in loaded.diagnostics if d.is_error] == []
    assert loaded.protocol is not None and len(loaded.protocol.cases) >= 3
    assert [t.id for t in loaded.protocol.turns] == ["initial", "expansion", "refinement",
                                                     "reflection"]
    weights = [s.weight for t in loaded.protocol.turns for s in t.scorers if s.weight]
    assert weights == [0.25, 0.25, 0.20, 0.15, 0.15]


def test_the_published_schema_describes_protocol_files() -> None:
    import yaml

    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    from turncheck.cli.schema_cmd import suite_schema

    validator = jsonschema.Draft202012Validator(suite_schema())
    data = yaml.safe_load(PROTOCOL.format(extra="  pass_threshold: 0.5\n"))
    assert validator.is_valid(data)
    typo = json.loads(json.dumps(data))
    typo["turns"][0]["scorers"][0]["list_f1"]["expectd"] = "x"
    assert not validator.is_valid(typo)
    both = json.loads(json.dumps(data))
    both["turns"][1]["variants"] = [{"id": "v", "prompt": "p"}]
    assert not validator.is_valid(both)  # prompt and variants
    assert not validator.is_valid({**data, "evals": []})


MT_BENCH = """\
metadata: {name: mt-bench, model: gpt-4o-mini}
cases: [{id: q1, vars: {question: Why?}}]
turns:
  - id: first
    prompt: "{{ case.vars.question }}"
    scorers:
      - id: quality
        label: Answer quality
        judge_scale: {rubric: Helpful., scale: SCALE}
"""


def test_a_judge_scale_takes_the_suites_scale_and_an_unordered_one_is_an_error() -> None:
    loaded = parse_suite(MT_BENCH.replace("SCALE", "[1, 10]"), "mt.eval.yaml")
    assert loaded.diagnostics == [] and loaded.protocol is not None
    [scorer] = loaded.protocol.turns[0].scorers
    assert scorer.label == "Answer quality"
    assert (scorer.spec.lowest, scorer.spec.highest) == (1, 10)
    min_max = parse_suite(MT_BENCH.replace("SCALE", "{min: 0, max: 10}"), "mt.eval.yaml")
    assert min_max.protocol is not None, problems(min_max)
    assert min_max.protocol.turns[0].scorers[0].spec.scale == [0, 10]
    default = parse_suite(MT_BENCH.replace(", scale: SCALE", ""), "mt.eval.yaml")
    assert default.protocol is not None
    assert default.protocol.turns[0].scorers[0].spec.scale == [1, 5]
    for bad, message in (("[10, 1]", "the lowest rating must be below the highest"),
                         ("[3, 3]", "the lowest rating must be below the highest"),
                         ("[0, 1000]", "has more than 101 ratings"),
                         ("[1]", "at least 2 items"), ("[1, 9.5]", "valid integer"),
                         ("{min: 5, max: 1}", "the lowest rating must be below")):
        text = MT_BENCH.replace("SCALE", bad)
        loaded = parse_suite(text, "mt.eval.yaml")
        assert loaded.protocol is None, bad
        assert any(message in d.message and d.line == line_of(text, "judge_scale")
                   for d in loaded.diagnostics), (bad, problems(loaded))


def test_a_suite_declares_its_aggregates_and_names_them() -> None:
    loaded = parse_suite(MT_BENCH.replace("SCALE", "[1, 10]")
                         + "aggregates:\n  labels: {score: MT-Bench score}\n", "mt.eval.yaml")
    assert loaded.protocol is not None, problems(loaded)
    # No list_f1, self-correction or self-assessment: only the weighted score is declared.
    assert loaded.protocol.declared_aggregates() == {"interactive_reasoning": "MT-Bench score"}
    gating = parse_suite(PROTOCOL.format(extra=""), "gating.eval.yaml").protocol
    assert gating is not None
    assert gating.declared_aggregates() == {
        "interactive_reasoning": "Interactive reasoning",
        "final_f1": "Final hierarchy F1", "self_correction": "Self-correction",
        "meta_cognition": "Meta-cognition (r)"}
    text = MT_BENCH.replace("SCALE", "[1, 10]") + "aggregates:\n  labels: {overall: X}\n"
    assert [d.code for d in parse_suite(text, "mt.eval.yaml").diagnostics] == ["unknown-key"]
