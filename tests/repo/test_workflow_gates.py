"""Issue 45 item 6: the workflows turncheck ships and documents gate pull requests on
the default conditions, not on `failure`, which fails most pull requests of a flaky
suite even when they change nothing; where `failure` is offered, the docs say so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from turncheck.cli import init_files
from turncheck.compare.policy import DEFAULT_FAIL_ON, parse_fail_on

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / ".github" / "workflows").glob("turncheck*.yml"))
TEMPLATES = {name: getattr(init_files, name)
             for name in ("WORKFLOW", "FORK_WORKFLOW", "TRUSTED_WORKFLOW")}
OFFERING_DOCS = ("docs/action.md", "docs/cli.md", "docs/configuration.md",
                 "docs/statistics.md")


def gates(text: str) -> list[str]:
    """Every `fail-on` a workflow's steps set."""
    found = []
    for job in (yaml.safe_load(text) or {}).get("jobs", {}).values():
        for step in job.get("steps", []):
            value = (step.get("with") or {}).get("fail-on")
            if value is not None:
                found.append(str(value))
    return found


def pull_request_gate_ok(value: str) -> bool:
    """A pull request's gate (it judges the change: `regression` in it) holds every
    default condition and not `failure`; the default branch's `invalid` alone is fine."""
    conditions = set(parse_fail_on(value))
    if conditions == set(parse_fail_on("invalid")):
        return True
    return set(DEFAULT_FAIL_ON) <= conditions and "failure" not in value.split(",")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_workflows_gate_on_the_default_conditions(path: Path) -> None:
    assert all(pull_request_gate_ok(g) for g in gates(path.read_text())), path.name


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_workflows_turncheck_init_writes_gate_on_the_default(name: str) -> None:
    text = TEMPLATES[name].replace("@ACTION@", "turncheck/turncheck@v1")
    text = re.sub(r"^@[A-Z_]+@$", "#", text, flags=re.M)  # a comment block
    text = re.sub(r"@[A-Z_]+@", "value", text)
    assert all(pull_request_gate_ok(g) for g in gates(text)), name


def test_the_action_docs_example_gates_on_the_default_conditions() -> None:
    text = (ROOT / "docs" / "action.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    found = [g for block in blocks if "jobs:" in block for g in gates(block)]
    assert found and all(pull_request_gate_ok(g) for g in found)


@pytest.mark.parametrize("path", OFFERING_DOCS)
def test_where_failure_is_offered_the_docs_say_what_it_does_on_flaky_suites(path: str
                                                                           ) -> None:
    text = (ROOT / path).read_text()
    assert "`failure`" in text and "flaky suite" in text
    assert "flaky suite" in init_files.FAIL_ON_NOTE
