"""The template checker understands `is defined` guards in every form Jinja allows.

A name only some cases define warns "will end in an error unless the template guards
it"; a correct guard (MT-Bench's judge shows the reference answer only when the question
has one) must silence it, and a wrong one must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.protocol_helpers import run_protocol_files, write_protocol
from tests.support.scripted_server import Json, ScriptedServer
from turncheck.formats.suite_loader import parse_suite
from turncheck.report.results import Status

REFERENCE = "case.ground_truth.reference"
MT_BENCH = """\
metadata: {{name: mt-bench-style, model: gpt-4o-mini}}
cases:
  - id: math-1
    vars: {{question: What is 3 + 4?}}
    ground_truth: {{reference: '7'}}
  - id: writing-1
    vars: {{question: Write a haiku about rain.}}
    ground_truth: {{}}
turns:
  - id: answer
    prompt: "{{{{ case.vars.question }}}}"
    scorers:
      - judge_scale:
          rubric: {rubric}
"""


def mt_bench(rubric: str) -> str:
    return MT_BENCH.format(rubric=json.dumps(rubric))


def diagnostics(rubric: str) -> list[tuple[str, str]]:
    loaded = parse_suite(mt_bench(rubric), "mt.eval.yaml")
    return [(d.severity.value, d.code) for d in loaded.diagnostics]


GUARDED = [
    f"Rate the answer.{{% if {REFERENCE} is defined %}} Reference: {{{{ {REFERENCE} }}}}"
    "{% endif %}",
    f"Rate the answer. {{{{ {REFERENCE} if {REFERENCE} is defined else '' }}}}",
    f"{{% if {REFERENCE} is not defined %}}Judge on merit.{{% else %}}Compare with "
    f"{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if {REFERENCE} is undefined %}}Judge on merit.{{% else %}}{{{{ {REFERENCE} }}}}"
    "{% endif %}",
    f"{{% if case.id and {REFERENCE} is defined and {REFERENCE} %}}"
    f"{{{{ {REFERENCE} | upper }}}}{{% endif %}}",
    f"{{{{ {REFERENCE} is defined and {REFERENCE} }}}}",
    f"{{{{ {REFERENCE} is undefined or {REFERENCE} }}}}",
    f"{{% if case.id == 'x' %}}x{{% elif {REFERENCE} is not defined %}}none"
    f"{{% else %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if not ({REFERENCE} is defined) %}}none{{% else %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if {REFERENCE} is defined %}}{{% for word in {REFERENCE}.split() %}}{{{{ word }}}}"
    "{% endfor %}{% endif %}",
    f"Rate it. Reference: {{{{ {REFERENCE} | default('none') }}}}",
    f"{{% if 'reference' in case.ground_truth %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if 'reference' not in case.ground_truth %}}none{{% else %}}{{{{ {REFERENCE} }}}}"
    "{% endif %}",
]

UNGUARDED = [
    f"Rate the answer. Reference: {{{{ {REFERENCE} }}}}",
    f"{{% if case.ground_truth is defined %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if {REFERENCE} is not defined %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if {REFERENCE} is defined or case.id %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if {REFERENCE} is defined %}}ok{{% endif %}}{{{{ {REFERENCE} }}}}",
    f"{{{{ '' if {REFERENCE} is defined else {REFERENCE} }}}}",
    f"{{% if {REFERENCE} %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if 'other' in case.ground_truth %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
    f"{{% if 'reference' in case.vars %}}{{{{ {REFERENCE} }}}}{{% endif %}}",
]


@pytest.mark.parametrize("rubric", GUARDED)
def test_a_guarded_reference_gives_no_warning(rubric: str) -> None:
    assert diagnostics(rubric) == []


@pytest.mark.parametrize("rubric", UNGUARDED)
def test_an_unguarded_reference_still_warns(rubric: str) -> None:
    found = diagnostics(rubric)
    assert found and set(found) == {("warning", "missing-case-value")}


def test_the_warning_names_five_cases_and_counts_the_rest() -> None:
    cases = "".join(f"  - {{id: c{i}, vars: {{question: q{i}}}}}\n" for i in range(8))
    text = mt_bench(f"{{{{ {REFERENCE} }}}}").replace(
        "  - id: writing-1\n", cases + "  - id: writing-1\n")
    [warning] = parse_suite(text, "mt.eval.yaml").diagnostics
    assert "case(s) c0, c1, c2, c3, c4 and 4 more;" in warning.message
    assert "is defined" in warning.message


def _judge(body: Json) -> bool:
    return "turncheck-judge-scale" in str(body.get("messages", [{}])[0].get("content", ""))


def test_the_guarded_judge_prompt_runs_for_cases_with_and_without_a_reference(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(json.dumps({"score": 5, "reason": "correct"}), when=_judge)
    scripted_server.add_rule("7")
    path = write_protocol(tmp_path, text=mt_bench(GUARDED[0]))
    report = run_protocol_files([path], scripted_server)
    assert [c.status for c in report.protocols[0].cases] == [Status.PASS, Status.PASS]
    judged = [str(r.json["messages"]) for r in scripted_server.requests if _judge(r.json)]
    assert sum("Reference: 7" in text for text in judged) == 1
