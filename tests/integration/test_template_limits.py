"""Template bombs (issue 23, defect 4): protocol and grader templates cannot do unbounded work.

A bomb known from the template alone is a validation error at its line; one that
depends on the data ends only the case (or sample) being rendered, naming the line.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from tests.support.protocol_helpers import PROTOCOL, run_protocol_files, write_protocol
from tests.support.scripted_server import ScriptedServer
from turncheck.formats.grader import template_problems
from turncheck.formats.suite_loader import parse_suite
from turncheck.report.results import Status
from turncheck.text.environment import sandboxed_environment
from turncheck.text.template_limits import MAX_OUTPUT_CHARS, TemplateLimitError

NESTED_LOOPS = ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}"
                "{% endfor %}")

STATIC_BOMBS = [
    ("{{ 9**(9**9) }}", "bits"),
    ("{{ 'a' * 3000000000 }}", "repeating a value 3,000,000,000 times"),
    (NESTED_LOOPS, "these loops run 9,999,800,001 times"),
    ("{{ '%999999999d' % 1 }}", "% formatting"),
    ("{{ range(5000000) | list }}", "range() of 5,000,000 numbers"),
]


def render(source: str, **context: object) -> str:
    return sandboxed_environment().from_string(source).render(**context)


@pytest.mark.parametrize(("source", "message"), STATIC_BOMBS)
def test_a_static_bomb_is_refused_when_rendered(source: str, message: str) -> None:
    with pytest.raises(TemplateLimitError, match="template line 1: "):
        render(source)


@pytest.mark.parametrize("source", [
    "{{ 'x'.ljust(10**9) }}",
    "{{ 'a' | center(1000000000) }}",
    "{{ '{:999999999}'.format(1) }}",
    "{{ range(99999) | join('a' * 1000000) }}",
    "{{ text | replace('', 'b' * 1000) }}",
    "{{ text | indent('c' * 100000) }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}",
    "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}"
    "{% endfor %}",
    "{% set big = [range(99999) | list] * 11 %}{{ big }}",
    "{% for x in range(3) recursive %}{% if loop.depth < 4 %}{{ loop(range(99999)) }}"
    "{% endif %}{% endfor %}",
    "{% for x in [1] recursive %}{{ loop(range(99999)) }}{% endfor %}",
    "{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}",
])
def test_data_dependent_bombs_are_refused(source: str) -> None:
    with pytest.raises(TemplateLimitError):
        render(source, text="line\n" * 5000)


def test_the_output_is_capped() -> None:
    source = "{% for i in range(99999) %}{{ chunk }}{% endfor %}"
    with pytest.raises(TemplateLimitError, match=f"longer than {MAX_OUTPUT_CHARS:,}"):
        render(source, chunk="y" * 100)


def test_the_diagnostic_names_the_template_line() -> None:
    with pytest.raises(TemplateLimitError, match=r"^template line 3: "):
        render("one\ntwo\n{{ 'a' * n }}", n=10**9)


def test_ordinary_templates_still_work() -> None:
    source = ("{% for i in range(3) %}{{ i }}{% endfor %} {{ 2**10 }} {{ 'ab' * 3 }} "
              "{{ '%05d' % 42 }} {{ '{:>3}'.format('x') }} {{ [1, 2] | join(',') }} "
              "{{ 'a' ~ 'b' }} {{ 1.5 * 2 }} {{ [1] + [2] }} {{ 'x' | center(5) }}|")
    assert render(source) == "012 1024 ababab 00042   x 1,2 ab 3.0 [1, 2]   x  |"


def test_big_numbers_are_data_where_they_size_nothing() -> None:
    source = ("{% set limits = dict(max_tokens=2000000) %}{{ limits.max_tokens }} "
              "{{ n | default(10000000) }} {{ range(0, 10**8, 10**6) | length }}")
    assert render(source) == "2000000 10000000 100"


def test_arithmetic_errors_are_template_errors() -> None:
    with pytest.raises(jinja2.TemplateError, match="ZeroDivisionError"):
        render("{{ 1 % 0 }}")


# -- protocol suites -------------------------------------------------------------------


def _with_prompt(template: str) -> str:
    return PROTOCOL.format(extra="").replace(
        "\"You listed {{ turns.initial.items | join(', ') }}. Subpopulations of Lymphocytes?\"",
        json.dumps(template),
    )


@pytest.mark.parametrize(("source", "message"), STATIC_BOMBS)
def test_validation_reports_a_static_bomb_at_its_line(source: str, message: str) -> None:
    text = _with_prompt(source)
    loaded = parse_suite(text, "gating.eval.yaml")
    [problem] = loaded.diagnostics
    line = next(i for i, row in enumerate(text.splitlines(), 1) if json.dumps(source) in row)
    assert (problem.line, problem.code) == (line, "template-limit")
    assert message in problem.message and loaded.protocol is None


@pytest.mark.parametrize("terms", [600, 5000])
def test_a_template_nested_too_deeply_is_a_diagnostic_not_a_crash(terms: int) -> None:
    source = "{{ " + " + ".join(["1"] * terms) + " }}"
    loaded = parse_suite(_with_prompt(source), "gating.eval.yaml")
    [problem] = loaded.diagnostics
    assert problem.code == "template-syntax" and "nests too deeply" in problem.message
    [grader_problem] = template_problems(source)
    assert "nests too deeply" in grader_problem


def test_a_when_expression_bomb_is_reported() -> None:
    text = PROTOCOL.format(extra="").replace(
        "when: turns.expansion.results.subsets.hallucinated", "when: 9 ** (9 ** 9)")
    loaded = parse_suite(text, "gating.eval.yaml")
    assert [d.code for d in loaded.diagnostics] == ["template-limit"]


def test_a_data_dependent_bomb_ends_only_its_case(tmp_path: Path,
                                                  scripted_server: ScriptedServer) -> None:
    text = (
        "metadata: {name: bombs, model: gpt-4o-mini}\n"
        "cases:\n"
        "  - {id: small, vars: {tag: '[CASE-A]', n: 3}}\n"
        "  - {id: bomb, vars: {tag: '[CASE-B]', n: 3000000000}}\n"
        "turns:\n"
        "  - id: only\n"
        "    prompt: \"{{ case.vars.tag }} {{ 'a' * case.vars.n }}\"\n"
        "    scorers: [{match: '*'}]\n"
    )
    scripted_server.add_rule("fine")
    report = run_protocol_files([write_protocol(tmp_path, text=text)], scripted_server)
    small, bomb = report.protocols[0].cases
    assert small.status is Status.PASS
    assert bomb.status is Status.ERROR
    assert 'turn "only" prompt: template line 1: repeating a value' in (bomb.error or "")


# -- grader prompts ----------------------------------------------------------------------


def test_a_grader_prompt_bomb_is_reported_statically() -> None:
    [problem] = template_problems("Rate this.\n{{ 9**(9**9) }}\n{{ conversation }}")
    assert problem.startswith("grader prompt: template line 2: 9 ** 387420489")
