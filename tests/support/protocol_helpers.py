"""A small flow-gating protocol and scripted answers for its cases (engine, compare tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.engine_helpers import FAKE_KEY, FAST_RETRIES
from tests.support.scripted_server import Json, ScriptedServer
from turncheck.choices import Mode
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.suite_loader import load_suite
from turncheck.report.run import Report

WEIGHTS = {"gates": 0.25, "subsets": 0.25, "constraint": 0.2, "estimate": 0.15, "ack": 0.15}

PROTOCOL = """\
metadata:
  name: gating
  model: gpt-4o-mini
{extra}cases:
  - id: misses-gate
    vars: {{tag: CASE-A, sample_type: PBMC}}
    ground_truth: &truth
      first_level: [Time, Singlets, Live, Lymphocytes]
      hierarchy:
        - Lymphocytes: [CD3+ T cells, B cells, NK cells]
      critical: [B cells, CD3+ T cells]
  - id: hallucinates
    vars: {{tag: CASE-B, sample_type: PBMC}}
    ground_truth: *truth
  - id: clean
    vars: {{tag: CASE-C, sample_type: whole blood}}
    ground_truth: *truth
turns:
  - id: initial
    prompt: |
      [{{{{ case.vars.tag }}}}] A panel for {{{{ case.vars.sample_type }}}}.
      What are the first-level gates?
    scorers:
      - id: gates
        list_f1: {{expected: case.ground_truth.first_level}}
        weight: 0.25
  - id: expansion
    prompt: "You listed {{{{ turns.initial.items | join(', ') }}}}. Subpopulations of Lymphocytes?"
    scorers:
      - id: subsets
        list_f1: {{expected: "case.ground_truth.hierarchy | subtree('Lymphocytes')"}}
        weight: 0.25
  - id: refinement
    variants:
      - id: missing_gate
        when: turns.expansion.results.subsets.missing | intersect(case.ground_truth.critical)
        prompt: "MISSING: you did not include {{{{ matched | first }}}}. Should we add it?"
      - id: error_correction
        when: turns.expansion.results.subsets.hallucinated
        prompt: "CORRECTION: is {{{{ matched | first }}}} supported by the panel?"
      - id: edge_case
        prompt: "EDGE: how would you handle doublets of T and B cells?"
    scorers:
      - id: constraint
        match: "*revised*"
        weight: 0.2
      - id: revised
        list_f1: {{expected: "case.ground_truth.hierarchy | subtree('Lymphocytes')"}}
        weight: 0
  - id: reflection
    prompt: |
      Here is the ground truth:
      {{{{ case.ground_truth.hierarchy | outline }}}}
      Yours was:
      {{{{ turns.refinement.outline }}}}
      Estimate your score.
    scorers:
      - id: estimate
        self_assessment: {{actual: turns.expansion.scores.subsets}}
        weight: 0.15
      - id: ack
        judge_scale: {{rubric: "Acknowledges what it missed for {{{{ case.id }}}}."}}
        weight: 0.15
aggregates:
  final_f1: expansion.subsets
  self_correction: {{before: expansion.subsets, after: refinement.revised}}
  labels: {{score: Interactive reasoning, final_f1: Final hierarchy F1}}
"""

# What the scripted model answers, per case and turn.
ANSWERS: dict[str, dict[int, str]] = {
    "CASE-A": {
        1: "- Singlets\n- Live\n- Lymphocytes",
        2: "- T cells (CD3+)\n- NK cells",
        3: "I revised it:\n- CD3+ T cells\n- B cells\n- NK cells",
        4: "My estimate: 70%",
    },
    "CASE-B": {
        1: "1. Time\n2. Singlets\n3. Live\n4. Lymphocytes",
        2: "- CD3+ T cells\n- B cells\n- NK cells\n- Dendritic cells",
        3: "Yes, that is right.",
        4: "Estimate: 50%",
    },
    "CASE-C": {
        1: "Time > Singlets > Live > Lymphocytes",
        2: '["CD3+ T cells", "B cells", "NK cells"]',
        3: "I revised nothing:\n- CD3+ T cells\n- B cells\n- NK cells",
        4: "I would estimate 90%.",
    },
}
JUDGE_RATINGS = {"CASE-A": 4, "CASE-B": 2, "CASE-C": 5}


def first_user(body: Json) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[0].get("content", "")) if users else ""


def is_judge(body: Json) -> bool:
    messages = body.get("messages", [])
    return bool(messages) and "turncheck-judge-scale/2" in str(messages[0].get("content", ""))


def script(server: ScriptedServer, answers: dict[str, dict[int, str]] | None = None,
           ratings: dict[str, Any] | None = None) -> None:
    """Rules answering every case's turns and judge calls."""
    answers = answers if answers is not None else ANSWERS
    ratings = ratings if ratings is not None else JUDGE_RATINGS
    for tag, rating in ratings.items():
        reply = rating if isinstance(rating, str) else json.dumps(
            {"score": rating, "reason": f"rated {rating}"})
        server.add_rule(reply, when=lambda body, tag=tag: is_judge(body)
                        and f"[{tag}]" in str(body["messages"][1]["content"]))
    for tag, turns in answers.items():
        for number, text in turns.items():
            server.add_rule(text, turn=number, when=lambda body, tag=tag: not is_judge(body)
                            and f"[{tag}]" in first_user(body))


def write_protocol(tmp_path: Path, extra: str = "", text: str | None = None,
                   name: str = "gating.eval.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text if text is not None else PROTOCOL.format(extra=extra), encoding="utf-8")
    return path


def run_protocol_files(paths: list[Path], server: ScriptedServer | None, mode: Mode = "live",
                       **overrides: Any) -> Report:
    import asyncio

    files = [load_suite(path) for path in paths]
    for loaded in files:
        assert not loaded.has_errors, loaded.diagnostics
        assert loaded.protocol is not None
    overrides.setdefault("base_url", server.base_url if server is not None else None)
    overrides.setdefault("provider", "openai")
    overrides["env"] = {"OPENAI_API_KEY": FAKE_KEY, **overrides.get("env", {})}
    overrides.setdefault("session", FAST_RETRIES)
    return asyncio.run(run_suite_files(files, RunSettings(mode=mode, **overrides)))


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
