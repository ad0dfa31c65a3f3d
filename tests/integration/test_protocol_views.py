"""Protocol views for any protocol: an MT-Bench-style suite (two turns, a 1–10 judge) in
the PR comment shows its own scorers, not the flow-gating protocol's, the PR's system
prompt change, and the base and head transcript of the case that broke, even when more
than ten cases that still fail come before it."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.support.action_harness import record, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.protocol_helpers import is_judge, run_protocol_files, write_protocol
from tests.support.scripted_server import Json, ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.render import protocol_console
from turncheck.render.html_report import render_report
from turncheck.report.run import Report

BASE_SYSTEM = "You are a helpful assistant. Answer fully."
HEAD_SYSTEM = "You are a terse assistant. Answer in as few words as you can."
STILL_FAILING = [f"q{n:02d}" for n in range(1, 13)]
BROKEN = "q13"
FLOW_GATING_ROWS = ("Interactive reasoning", "Final hierarchy F1", "Final F1",
                    "Self-correction", "Self\\-correction", "Meta-cognition", "Meta\\-cognition")

MT_BENCH = """\
metadata:
  name: mt-bench
  model: gpt-4o-mini
  provider: openai
  base_url: {url}
  temperature: 0
  system_prompt: {system}
  pass_threshold: 0.6
cases:
{cases}
turns:
  - id: first
    prompt: "[{{{{ case.id }}}}] {{{{ case.vars.question }}}}"
    scorers:
      - id: helpfulness
        judge_scale: {{rubric: The answer is helpful and accurate., scale: [1, 10]}}
  - id: follow_up
    prompt: Now explain it again to a ten-year-old.
    scorers:
      - id: correctness
        judge_scale: {{rubric: The explanation is correct and suits a child., scale: [1, 10]}}
"""


def mt_bench(url: str, system: str) -> str:
    cases = "\n".join(f"  - {{id: {case}, vars: {{question: Question {case}?}}}}"
                      for case in [*STILL_FAILING, BROKEN])
    return MT_BENCH.format(url=url, system=system, cases=cases)


def _judged(body: Json) -> str:
    return str(body["messages"][1]["content"])


def script_mt_bench(server: ScriptedServer) -> None:
    """The model answers every case; at head (the terse system prompt) the broken case's
    second answer is a bare word. The judge rates 8/10 what the broken case says at base,
    3/10 its terse answer, 2/10 every other case's."""
    server.add_rule(json.dumps({"score": 3, "reason": "Too terse for a child."}),
                    when=lambda body: is_judge(body) and "TERSE-REPLY" in _judged(body))
    server.add_rule(json.dumps({"score": 8, "reason": "Clear and correct."}),
                    when=lambda body: is_judge(body) and f"[{BROKEN}]" in _judged(body))
    server.add_rule(json.dumps({"score": 2, "reason": "Vague."}), when=is_judge)
    terse = HEAD_SYSTEM.split(".")[0]
    server.add_rule("No. TERSE-REPLY", turn=2,
                    when=lambda body: f"[{BROKEN}]" in json.dumps(body) and terse in
                    json.dumps(body["messages"][0]))
    server.add_rule("A patient, child-sized explanation. CHILD-REPLY", turn=2)
    server.add_rule("A first answer. FIRST-REPLY", turn=1)


def test_mt_bench_comment_shows_its_scorers_the_system_prompt_change_and_the_broken_case(
    tmp_path: Path, scripted_server: ScriptedServer, github_fake: FakeGitHub
) -> None:
    script_mt_bench(scripted_server)
    repo = GitRepo(tmp_path / "workspace")
    suite = "evals/mt-bench.eval.yaml"
    repo.write(suite, mt_bench(scripted_server.base_url, BASE_SYSTEM))
    record(repo.path / suite)
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.write(suite, mt_bench(scripted_server.base_url, HEAD_SYSTEM))
    record(repo.path / suite)  # the PR records its new system prompt's answers
    head = repo.commit("a terser system prompt")

    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head)

    [comment] = github_fake.comments_on(7)
    body = comment.body
    assert run.returncode == 1, run.stdout + run.stderr  # the broken case fails the check
    for row in FLOW_GATING_ROWS:
        assert row not in body, row
    assert "| Weighted score | 0.16 | 0.14 | −0.02 |" in body
    assert "| helpfulness · first | 2.5/10 | 2.5/10 | ±0.0 |" in body
    assert "| correctness · follow\\_up | 2.5/10 | 2.1/10 | −0.4 |" in body
    # The PR's system prompt change, as eval suites show it.
    assert "**✏️ System prompt changed**" in body
    assert f"- base: {BASE_SYSTEM}" in body and f"- head: {HEAD_SYSTEM}" in body
    # The broken case says where it broke, and its transcript (base, then head) is shown
    # although the 12 cases before it still fail and the cap is 10 transcripts.
    assert f"**❌ {BROKEN}** · broken · broke on turn 2: correctness 8 → 3" in body
    transcripts = [t for t in body.split("<details><summary>")[1:]
                   if "— transcript" in t.split("\n")[0]]
    cases = [t.split(" ", 2)[1] for t in transcripts]
    assert cases == [BROKEN, *STILL_FAILING[:9]], cases
    broken = transcripts[0]
    assert "transcript, base and head" in broken.split("\n")[0]
    assert "Base response:\n\n```\nA patient, child-sized explanation. CHILD-REPLY\n```" in broken
    assert "Head response:\n\n```\nNo. TERSE-REPLY\n```" in broken
    assert "rated 3/10: Too terse for a child. · base 0.78 — rated 8/10: Clear and correct." \
        in broken


def test_a_judge_rating_off_the_declared_scale_is_an_error_not_a_score(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(json.dumps({"score": 11, "reason": "Off the scale."}),
                             when=is_judge)
    scripted_server.add_rule("An answer.")
    path = write_protocol(tmp_path, text=mt_bench(scripted_server.base_url, BASE_SYSTEM))
    report = run_protocol_files([path], scripted_server)
    [suite] = report.protocols
    case = suite.cases[0]
    assert case.status.value == "error" and case.aggregates.interactive_reasoning is None
    [scorer] = case.turns[0].scorers
    assert scorer.score is None
    assert scorer.error == "judge score must be an integer from 1 to 10, got 11"
    assert suite.aggregate_labels == {"interactive_reasoning": "Weighted score"}


def _side(tmp_path: Path, server: ScriptedServer, system: str, name: str) -> Report:
    directory = tmp_path / name
    directory.mkdir()
    path = write_protocol(directory, text=mt_bench(server.base_url, system),
                          name="mt-bench.eval.yaml")
    report = run_protocol_files([path], server, commit=name)
    for suite in report.protocols:
        suite.path = "evals/mt-bench.eval.yaml"
    return report


def test_console_and_html_report_show_the_suites_own_views(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script_mt_bench(scripted_server)
    base = _side(tmp_path, scripted_server, BASE_SYSTEM, "base")
    head = _side(tmp_path, scripted_server, HEAD_SYSTEM, "head")
    assert head.protocols[0].system_prompt == HEAD_SYSTEM

    out = io.StringIO()
    protocol_console.transcript(head, out)
    protocol_console.summary(head, out)
    console = out.getvalue()
    for row in (*FLOW_GATING_ROWS, "Reasoning", "Meta r", "final F1", "self-correction"):
        assert row not in console, row
    assert "Overall: ❌ FAIL (weighted score 0.50 < 0.6)" in console
    assert "Scorer means: first.helpfulness 2.5/10 · follow_up.correctness 2.1/10" \
        in console
    header = next(line for line in console.splitlines() if line.startswith("Protocol"))
    assert "Weighted score" in header and "F1" not in header

    html = render_report(head=head, base=base, comparison=compare_reports(base, head))
    assert "System prompt changed" in html
    assert "broke on turn 2: correctness 8 → 3" in html
    assert "weighted score 0.78" in html and "Final" not in html
