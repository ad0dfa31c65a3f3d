"""Protocol suites base → head: score deltas, transitions, totals, policy and the PR comment."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from tests.support.action_harness import record, run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.protocol_helpers import (
    ANSWERS,
    JUDGE_RATINGS,
    run_protocol_files,
    script,
    write_protocol,
)
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons
from turncheck.render.comment import COMMENT_LIMIT, MARKER, CommentContext, comment_markdown
from turncheck.report.protocol_comparison import ProtocolComparison
from turncheck.report.results import Status
from turncheck.report.rows import Transition
from turncheck.report.run import Report
from turncheck.stats.verdicts import Verdict

TIMESTAMP = "2025-06-01T00:00:00Z"


def run_side(tmp_path: Path, server: ScriptedServer, answers: dict[str, dict[int, str]],
             ratings: dict[str, object], commit: str) -> Report:
    server.reset()
    script(server, answers, ratings)  # type: ignore[arg-type]
    directory = tmp_path / commit
    directory.mkdir()
    report = run_protocol_files([write_protocol(directory)], server, price_timestamp=TIMESTAMP,
                                commit=commit)
    # Both sides as if the suite lived at one path in the repository.
    for suite in report.protocols:
        suite.path = "evals/gating.eval.yaml"
    return report


@pytest.fixture
def reports(tmp_path: Path, scripted_server: ScriptedServer) -> tuple[Report, Report]:
    base = run_side(tmp_path, scripted_server, ANSWERS, JUDGE_RATINGS, "base")
    head_answers = copy.deepcopy(ANSWERS)
    head_answers["CASE-B"][2] = "- CD3+ T cells\n- B cells\n- NK cells"  # no hallucination now
    head_ratings = {**JUDGE_RATINGS, "CASE-C": "no JSON here"}  # the judge breaks on clean
    head = run_side(tmp_path, scripted_server, head_answers, head_ratings, "head")
    return base, head


def protocols(comparison_protocols: ProtocolComparison | None) -> ProtocolComparison:
    assert comparison_protocols is not None
    return comparison_protocols


def test_per_turn_and_aggregate_deltas(reports: tuple[Report, Report]) -> None:
    base, head = reports
    comparison = compare_reports(base, head)
    [suite] = protocols(comparison.protocols).suites
    assert suite.turn_ids == ["initial", "expansion", "refinement", "reflection"]
    cases = {c.id: c for c in suite.cases}
    b = cases["hallucinates"]
    assert b.transition is Transition.UNCHANGED and not b.regression
    expansion = next(t for t in b.turns if t.id == "expansion")
    base_case = next(c for c in base.protocols[0].cases if c.id == "hallucinates")
    head_case = next(c for c in head.protocols[0].cases if c.id == "hallucinates")
    assert expansion.base == base_case.turns[1].score
    assert expansion.head == head_case.turns[1].score == 1.0
    assert expansion.delta == pytest.approx(1.0 - (base_case.turns[1].score or 0))
    refinement = next(t for t in b.turns if t.id == "refinement")
    assert (refinement.base_variant, refinement.head_variant) == ("error_correction", "edge_case")
    irs = b.aggregates["interactive_reasoning"]
    assert irs.delta == pytest.approx(
        (head_case.aggregates.interactive_reasoning or 0)
        - (base_case.aggregates.interactive_reasoning or 0)
    )
    suite_irs = suite.aggregates["interactive_reasoning"]
    assert suite_irs.base == base.protocols[0].aggregates.interactive_reasoning
    assert suite_irs.head == head.protocols[0].aggregates.interactive_reasoning
    assert suite.aggregates["meta_cognition"].base == base.protocols[0].aggregates.meta_cognition


def test_transitions_counts_and_policy(reports: tuple[Report, Report]) -> None:
    base, head = reports
    comparison = compare_reports(base, head)
    result = protocols(comparison.protocols)
    clean = next(c for c in result.suites[0].cases if c.id == "clean")
    # The judge's answer errored at head: infrastructure, neither broken nor a verdict.
    assert (clean.transition, clean.regression) == (Transition.ERRORED, False)
    assert clean.head_status is Status.ERROR and "judge answer is not JSON" in (clean.error or "")
    assert (result.counts.cases, result.counts.passed, result.counts.errors) == (3, 2, 1)
    assert (result.counts.broken, result.counts.regressions) == (0, 0)
    assert (clean.verdict, clean.verdict_cause) == (Verdict.INCONCLUSIVE, "errors")
    assert fail_reasons(comparison, {FailOn.FAILURE, FailOn.REGRESSION,
                                     FailOn.LIKELY_REGRESSION, FailOn.BROKEN}) == []
    assert fail_reasons(comparison, {FailOn.ERROR}) == [
        "1 protocol case errored (infrastructure, not a verdict)"]
    assert fail_reasons(comparison, {FailOn.INVALID}) == []


def test_protocol_spend_counts_in_the_totals(reports: tuple[Report, Report]) -> None:
    base, head = reports
    comparison = compare_reports(base, head)
    assert comparison.totals.head is not None and comparison.totals.base is not None
    head_tokens = sum(s.usage.total + s.judge_usage.total for s in head.protocols)
    assert comparison.totals.head.tokens + comparison.totals.head.judge_tokens == head_tokens
    assert comparison.totals.delta.tokens == (
        comparison.totals.head.tokens - comparison.totals.base.tokens
    )
    assert comparison.totals.head.total_cost_usd == pytest.approx(
        sum((s.cost_usd or 0) + (s.judge_cost_usd or 0) for s in head.protocols)
    )
    # Without a base, every case is new and nothing is a regression.
    alone = compare_reports(None, head)
    assert {c.transition for c in protocols(alone.protocols).suites[0].cases} == {Transition.NEW}


def test_removed_and_renamed_protocol_suites(reports: tuple[Report, Report]) -> None:
    base, head = reports
    moved = head.model_copy(deep=True)
    moved.protocols[0].path = "evals/renamed.eval.yaml"
    renamed = protocols(compare_reports(base, moved, renames={
        "evals/renamed.eval.yaml": "evals/gating.eval.yaml"}).protocols)
    assert [(s.state.value, s.previous_path) for s in renamed.suites] == [
        ("renamed", "evals/gating.eval.yaml")]
    gone = moved.model_copy(update={"protocols": []})
    removed = protocols(compare_reports(base, gone).protocols)
    assert [s.state.value for s in removed.suites] == ["removed"]
    assert removed.counts.removed == 3 and removed.counts.cases == 0
    assert compare_reports(None, gone).protocols is None


def test_comment_shows_turn_tables_aggregates_and_deltas(reports: tuple[Report, Report]) -> None:
    base, head = reports
    comparison = compare_reports(base, head)
    reasons = fail_reasons(comparison, {FailOn.ERROR})
    body = comment_markdown(comparison, CommentContext(fail_reasons=reasons, head=head))
    assert body.split("\n")[1].startswith(
        "## ❌ 1 protocol case errored \\(not judged\\) · clean: turn ")
    assert "2 of 3 cases pass" in body
    quiet = comment_markdown(comparison, CommentContext(fail_reasons=[], head=head))
    assert quiet.split("\n")[1].startswith("## ⚠️ 1 protocol case errored \\(not judged\\) · clean")
    assert "2 of 3 protocol cases pass" in quiet
    assert "### 🧪 gating · `evals/gating.eval.yaml`" in body
    assert "| Interactive reasoning |" in body
    assert "| Turn | Variant | Score | Base | Δ | Tokens | Cost |" in body
    assert "edge\\_case \\(base error\\_correction\\)" in body
    assert "**💥 clean** · errored" in body
    assert "<summary>✅ misses-gate · pass — transcript</summary>" in body
    assert re.search(r"\| expansion \| — \| 1\.00 \| 0\.86 \| \+0\.14 \|", body), body


def test_comment_escapes_untrusted_text_and_fits(tmp_path: Path,
                                                 scripted_server: ScriptedServer) -> None:
    evil = "@octocat </details><!-- | --- | #1 ::error::x"
    answers = {tag: {n: f"{evil}\n{text}" + "x" * 3000 for n, text in turns.items()}
               for tag, turns in ANSWERS.items()}
    report = run_side(tmp_path, scripted_server, answers, JUDGE_RATINGS, "head")
    # Many cases: the same results under 120 ids that are themselves hostile.
    suite = report.protocols[0]
    suite.cases = [c.model_copy(update={"id": f"{evil} {i}"}) for i in range(40)
                   for c in suite.cases]
    comparison = compare_reports(None, report)
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report))
    assert len(body) <= COMMENT_LIMIT and body.startswith(MARKER)
    assert "@octocat" not in body and "@\u200boctocat" in body
    assert "</details><!--" not in body.replace("</details>\n", "")
    assert "more cases not shown" in body
    assert "| Interactive reasoning |" in body  # the aggregates always stay


# --- the action: a PR that changes only a protocol's cases file --------------------------

ACTION_SUITE = """\
metadata:
  name: gating
  model: gpt-4o-mini
  provider: openai
  base_url: {url}
  temperature: 0
cases: {{file: gating.cases.yaml}}
turns:
  - id: initial
    prompt: "[{{{{ case.id }}}}] First-level gates?"
    scorers:
      - id: gates
        list_f1: {{expected: case.ground_truth.gates}}
"""


def test_action_runs_a_protocol_whose_cases_file_changed(
    tmp_path: Path, scripted_server: ScriptedServer, github_fake: FakeGitHub
) -> None:
    scripted_server.add_rule("- Singlets\n- Live\n- Lymphocytes")
    repo = GitRepo(tmp_path / "workspace")
    repo.write("evals/gating.eval.yaml", ACTION_SUITE.format(url=scripted_server.base_url))
    repo.write("evals/gating.cases.yaml",
               "- {id: pbmc, ground_truth: {gates: [Singlets, Live, Lymphocytes, Monocytes]}}\n")
    record(repo.path / "evals/gating.eval.yaml")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    # Only the ground truth changes: the suite must still run, at head and at base.
    repo.write("evals/gating.cases.yaml",
               "- {id: pbmc, ground_truth: {gates: [Singlets, Live, Lymphocytes]}}\n")
    head = repo.commit("fix the ground truth")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    head_report, base_report = run.report["head"], run.report["base"]
    assert isinstance(head_report, dict) and isinstance(base_report, dict)
    [head_suite] = head_report["protocols"]
    [base_suite] = base_report["protocols"]
    assert head_suite["cases"][0]["turns"][0]["score"] == 1.0
    assert base_suite["cases"][0]["turns"][0]["score"] == pytest.approx(2 * 0.75 / 1.75)
    [comment] = github_fake.comments_on(7)
    assert "| Final F1 | 0.86 | 1.00 | +0.14 |" in comment.body  # no label: the default
    assert "| initial | — | 1.00 | 0.86 | +0.14 |" in comment.body


def test_compare_command_prints_protocol_deltas(tmp_path: Path,
                                                 reports: tuple[Report, Report]) -> None:
    import subprocess
    import sys

    base, head = reports
    (tmp_path / "base.json").write_text(base.model_dump_json(), encoding="utf-8")
    (tmp_path / "head.json").write_text(head.model_dump_json(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "turncheck", "compare", str(tmp_path / "base.json"),
         str(tmp_path / "head.json"), "--fail-on", "error"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 protocol case errored (infrastructure, not a verdict)" in done.stderr
    lines = done.stdout.splitlines()
    assert any("hallucinates" in line and "expansion" in line and "0.86→1.00" in line
               and "+0.14" in line for line in lines), done.stdout
    assert any("hallucinates" in line and "refinement" in line
               and "error_correction→edge_case" in line for line in lines), done.stdout
    assert any("clean" in line and "errored · inconclusive" in line for line in lines), \
        done.stdout
    assert "evals/gating.eval.yaml: Interactive reasoning " in done.stdout
