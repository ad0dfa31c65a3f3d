"""Protocol cases repeat like evals: independent conversations per sample, cassettes keyed
by sample, per-sample weighted scores, and score verdicts from the clustered permutation
test (docs/statistics.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.protocol_helpers import first_user, run_protocol_files, write_protocol
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons
from turncheck.providers.call_context import SAMPLE_HEADER
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.report.comparison import Comparison
from turncheck.report.protocol import CaseResult
from turncheck.report.protocol_comparison import CaseComparison
from turncheck.report.results import Status
from turncheck.report.run import Report
from turncheck.stats.verdicts import Verdict

ROOT = Path(__file__).resolve().parents[2]

COIN = """\
metadata:
  name: coin
  model: gpt-4o-mini
{extra}cases:
  - id: steady
    vars: {{tag: STEADY}}
  - id: coin
    vars: {{tag: COIN}}
turns:
  - id: ask
    prompt: "[{{{{ case.vars.tag }}}}] Is the door open?"
    scorers:
      - id: open
        match: "*yes*"
        weight: 3
      - id: polite
        match: "*please*"
        weight: 1
"""


def coin_server(server: ScriptedServer, yes: int = 3) -> None:
    """STEADY always scores 1; COIN scores 1 on `yes` samples, 0.25 on the others."""
    server.add_rule("yes, please", when=lambda body: "[STEADY]" in first_user(body))
    server.add_rule("yes, please come in", when=lambda body: "[COIN]" in first_user(body),
                    times=yes)
    server.default_reply = "no, please"


def write_coin(tmp_path: Path, extra: str = "") -> Path:
    return write_protocol(tmp_path, text=COIN.format(extra=extra), name="coin.eval.yaml")


def cases(report: Report) -> dict[str, CaseResult]:
    [suite] = report.protocols
    return {c.id: c for c in suite.cases}


def stable(report: Report) -> str:
    # Timestamps and the run's id apart (the run's start and, without --price-timestamp,
    # its price instant).
    data = report.model_dump(mode="json", exclude={"started_at": True, "duration_s": True,
                                                   "run_id": True,
                                                   "price_source": {"timestamp"}})
    return json.dumps(data, sort_keys=True)


def test_repeat_5_gives_each_case_five_scored_samples_and_replays_identically(
    tmp_path: Path,
) -> None:
    path = write_coin(tmp_path, "  repeat: 5\n  pass_threshold: 0.5\n")
    with ScriptedServer() as server:
        coin_server(server)
        recorded = run_protocol_files([path], server, mode="record")
        url = server.base_url
        sent = len(server.requests)
    assert sent == 10  # two cases × five independent conversations
    coin = cases(recorded)["coin"]
    assert [s.index for s in coin.samples] == [0, 1, 2, 3, 4]
    assert sorted(s.score for s in coin.samples if s.score is not None) == [
        0.25, 0.25, 1.0, 1.0, 1.0]
    assert all(len(s.turns) == 1 and s.usage.total > 0 for s in coin.samples)
    assert coin.repeats is not None
    assert (coin.repeats.passes, coin.repeats.samples, coin.repeats.flaky) == (3, 5, True)
    assert (coin.repeats.pass_rate_low, coin.repeats.pass_rate_high) == pytest.approx(
        (0.2307, 0.8824), abs=1e-4)
    # Default min_pass: every sample must pass; the case's score is the samples' mean.
    assert coin.status is Status.FAIL
    assert coin.aggregates.interactive_reasoning == pytest.approx((3 * 1.0 + 2 * 0.25) / 5)
    assert coin.usage.total == sum(s.usage.total for s in coin.samples)
    steady = cases(recorded)["steady"]
    assert steady.status is Status.PASS and steady.repeats is not None
    assert not steady.repeats.flaky and [s.score for s in steady.samples] == [1.0] * 5
    assert SAMPLE_HEADER in cassette_path_for(path).read_text()

    first = run_protocol_files([path], None, mode="replay", base_url=url)
    second = run_protocol_files([path], None, mode="replay", base_url=url)
    assert stable(first) == stable(second)
    replayed = cases(first)["coin"]
    assert [(s.index, s.score, s.status) for s in replayed.samples] == [
        (s.index, s.score, s.status) for s in coin.samples]
    assert replayed.repeats == coin.repeats


def test_min_pass_and_seeds_follow_the_eval_rules(tmp_path: Path) -> None:
    path = write_coin(tmp_path, "  repeat: 5\n  min_pass: 3\n  seed: 40\n"
                                "  pass_threshold: 0.5\n")
    with ScriptedServer() as server:
        coin_server(server)
        report = run_protocol_files([path], server)
        seeds = sorted(r.json["seed"] for r in server.requests
                       if "[COIN]" in first_user(r.json))
    coin = cases(report)["coin"]
    assert coin.status is Status.PASS
    assert seeds == [40, 41, 42, 43, 44]
    assert [s.seed for s in coin.samples] == [40, 41, 42, 43, 44]


def test_old_single_sample_cassettes_replay_as_sample_zero_and_record_fills_the_rest(
    tmp_path: Path,
) -> None:
    path = write_coin(tmp_path)
    with ScriptedServer() as server:
        coin_server(server, yes=100)
        once = run_protocol_files([path], server, mode="record")
        assert SAMPLE_HEADER not in cassette_path_for(path).read_text()
        assert cases(once)["coin"].samples == [] and cases(once)["coin"].repeats is None
        write_coin(tmp_path, "  repeat: 3\n")
        missing = cases(run_protocol_files([path], None, mode="replay",
                                           base_url=server.base_url))["coin"]
        assert [s.status for s in missing.samples] == [Status.PASS, Status.ERROR, Status.ERROR]
        assert "sample 1" in (missing.samples[1].error or "")
        before = len(server.requests)
        run_protocol_files([path], server, mode="record")
        assert len(server.requests) - before == 4  # samples 1 and 2 of both cases
        url = server.base_url
    replayed = cases(run_protocol_files([path], None, mode="replay", base_url=url))["coin"]
    assert [s.status for s in replayed.samples] == [Status.PASS] * 3


def test_repeat_auto_stops_steady_cases_early_and_tops_up_varying_ones(tmp_path: Path) -> None:
    path = write_coin(tmp_path, "  repeat: auto\n  max_repeat: 14\n")
    with ScriptedServer() as server:
        coin_server(server)
        report = run_protocol_files([path], server)
    coin, steady = cases(report)["coin"], cases(report)["steady"]
    assert coin.repeats is not None and steady.repeats is not None
    assert (coin.repeats.samples, coin.repeats.samples_saved) == (14, 0)
    assert (steady.repeats.samples, steady.repeats.samples_saved, steady.repeats.adaptive) == (
        10, 4, True)


def test_command_line_repeat_applies_to_protocol_cases(tmp_path: Path) -> None:
    path = write_coin(tmp_path, "  repeat: 4\n")
    report_path = tmp_path / "report.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    env.pop("GITHUB_ACTIONS", None)
    with ScriptedServer() as server:
        coin_server(server)
        done = subprocess.run(
            [sys.executable, "-m", "turncheck", "run", str(path), "--mode", "live",
             "--base-url", server.base_url, "--repeat", "2", "--json", str(report_path)],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False,
        )
    assert "Traceback" not in done.stderr, done.stderr
    data = json.loads(report_path.read_text())
    assert [len(c["samples"]) for c in data["protocols"][0]["cases"]] == [2, 2]
    assert data["protocols"][0]["cases"][0]["samples"][1]["score"] == 1.0
    assert "Overall: ✅ PASS (weighted score 1.00) · 2/2 samples passed; scores 1.00 1.00" \
        in done.stdout


def coin_report(tmp_path: Path, yes: int, repeat: int) -> Report:
    extra = f"  repeat: {repeat}\n  pass_threshold: 0.5\n" if repeat > 1 else \
        "  pass_threshold: 0.5\n"
    path = write_coin(tmp_path / f"run-{yes}-{repeat}", extra)
    with ScriptedServer() as server:
        coin_server(server, yes=yes)
        return run_protocol_files([path], server)


def compare(base: Report, head: Report) -> Comparison:
    """The two runs (in their own directories) compared as one suite."""
    return compare_reports(base, head, renames={head.protocols[0].path: base.protocols[0].path})


def verdicts(comparison: Comparison) -> dict[str, CaseComparison]:
    assert comparison.protocols is not None
    [suite] = comparison.protocols.suites
    return {c.id: c for c in suite.cases}


def run_again(directory: Path, yes: int) -> Report:
    with ScriptedServer() as server:
        coin_server(server, yes=yes)
        return run_protocol_files([write_coin(directory, "  repeat: 10\n  pass_threshold: 0.5\n")],
                                  server)


@pytest.fixture()
def coin_dirs(tmp_path: Path) -> Path:
    for yes in (1, 3, 10):
        for repeat in (1, 10):
            (tmp_path / f"run-{yes}-{repeat}").mkdir()
    return tmp_path


def test_a_score_drop_over_ten_samples_is_a_regression_with_its_figures(coin_dirs: Path) -> None:
    base, head = coin_report(coin_dirs, 10, 10), coin_report(coin_dirs, 3, 10)
    comparison = compare(base, head)
    coin, steady = verdicts(comparison)["coin"], verdicts(comparison)["steady"]
    assert coin.verdict is Verdict.REGRESSION and coin.p_value is not None
    assert coin.p_value < 0.01
    assert coin.base is not None and coin.head is not None
    assert (coin.base.passes, coin.base.samples) == (10, 10)
    assert (coin.head.passes, coin.head.samples, coin.head.flaky) == (3, 10, True)
    assert sorted(coin.head.scores) == [0.25] * 7 + [1.0] * 3
    assert coin.score_change == pytest.approx((3 + 7 * 0.25) / 10 - 1.0)
    assert coin.flaky
    assert steady.verdict is Verdict.UNCHANGED
    counts = comparison.protocols.counts if comparison.protocols else None
    assert counts is not None and counts.verdicts["regression"] == 1 and counts.flaky == 1
    assert fail_reasons(comparison, {FailOn.REGRESSION}) == [
        "1 protocol case regression against base"]
    assert fail_reasons(comparison, {FailOn.FLAKY}) == [
        "1 flaky protocol case (passed on some samples, failed on others)"]
    data = json.loads(comparison.model_dump_json())
    case = data["protocols"]["suites"][0]["cases"][1]
    assert (case["verdict"], case["base"]["samples"], case["head"]["passes"]) == (
        "regression", 10, 3)
    from turncheck.render.compare_console import protocol_lines

    [row] = [line for line in protocol_lines(comparison.protocols) if " coin " in line]
    assert (f"broken · regression (mean score 1.00 → 0.47, 10/10 → 3/10, "
            f"adjusted p = {coin.p_value:.2g} (raw p = {coin.p_raw:.2g}))") in row
    # The other direction is an improvement.
    assert verdicts(compare(head, base))["coin"].verdict is Verdict.IMPROVEMENT


def test_identical_flaky_sides_and_one_sample_flips_are_never_a_regression(
    coin_dirs: Path,
) -> None:
    flaky = coin_report(coin_dirs, 3, 10)
    (coin_dirs / "again").mkdir()
    again = run_again(coin_dirs / "again", yes=3)
    same = verdicts(compare(flaky, again))
    assert {c.verdict for c in same.values()} == {Verdict.UNCHANGED}
    good = coin_report(coin_dirs, 1, 1)  # the single COIN sample answers "yes"
    with ScriptedServer() as server:
        server.add_rule("yes, please", when=lambda body: "[STEADY]" in first_user(body))
        server.default_reply = "no"
        bad = run_protocol_files([write_coin(coin_dirs / "run-1-1", "  pass_threshold: 0.5\n")],
                                 server)
    flip = verdicts(compare(good, bad))["coin"]
    assert flip.base is not None and flip.head is not None
    assert (flip.base.scores, flip.head.scores) == ([1.0], [0.0])
    # One sample per side: symmetric transitions, never a statistical tier.
    assert flip.verdict is Verdict.BROKEN
    assert verdicts(compare(bad, good))["coin"].verdict is Verdict.FIXED


def test_estimates_count_every_sample_of_a_protocol_case(tmp_path: Path) -> None:
    from turncheck.engine.estimate import estimate
    from turncheck.engine.pricing import Pricer
    from turncheck.formats.suite_loader import load_suite

    once = estimate([load_suite(write_coin(tmp_path))], Pricer.at(None))
    repeated = estimate([load_suite(write_coin(tmp_path, "  repeat: 4\n"))], Pricer.at(None))
    overridden = estimate([load_suite(write_coin(tmp_path, "  repeat: 4\n"))], Pricer.at(None),
                          repeat=2)
    assert [s.samples for s in (*repeated.suites, *overridden.suites)] == [4, 2]
    assert repeated.worst.tokens == 4 * once.worst.tokens
    assert overridden.worst.tokens == 2 * once.worst.tokens


def test_the_comment_speaks_protocol_case_verdicts_like_eval_verdicts(coin_dirs: Path) -> None:
    from turncheck.render.comment import CommentContext, comment_markdown

    base, head = coin_report(coin_dirs, 10, 10), coin_report(coin_dirs, 3, 10)
    comparison = compare(base, head)
    reasons = fail_reasons(comparison, {FailOn.REGRESSION})
    body = comment_markdown(comparison, CommentContext(fail_reasons=reasons, head=head, base=base))
    changed = body[body.index("### 🔻 Regressions"):]
    line = next(row for row in changed.splitlines() if "**coin**" in row)
    p_value = verdicts(comparison)["coin"].p_value
    assert line.startswith("- 🔻 **coin** · coin (protocol case) · ")
    assert "mean score 1.00 → 0.47, pass rate 100% \\[72–100%\\] → 30% " in line
    assert f"\\(10/10 → 3/10 samples\\) · adjusted p = {p_value:.2g} \\(raw p = " in line
    assert line.endswith("🎲 flaky")
    assert "turncheck: **🔴 1 regressed**" in body and "1 flaky" in body
    assert ("**❌ coin** · broken · 3/10 samples pass · 🎲 flaky · weighted score 0.47"
            in body)


def test_a_protocol_case_regression_is_annotated_at_its_line(coin_dirs: Path) -> None:
    from turncheck.github.annotations import collect_annotations

    base, head = coin_report(coin_dirs, 10, 10), coin_report(coin_dirs, 3, 10)
    comparison = compare(base, head)
    [annotation] = [a for a in collect_annotations(comparison, ".", head)
                    if "protocol case" in a.message]
    assert annotation.path == head.protocols[0].path
    assert annotation.start_line == verdicts(comparison)["coin"].line == 9  # "- id: coin"
    assert annotation.annotation_level == "failure"
    assert "'coin' now fails (was: passes) (mean score 1.00 → 0.47" in annotation.message


def test_the_html_report_gives_a_case_its_p_value_and_reason_as_an_eval(
        coin_dirs: Path) -> None:
    """The HTML report's case rows are judged as eval rows are: where the case broke,
    the adjusted p-value and the verdict's reason beside the figures."""
    from turncheck.render.html_report import build_view

    base, head = coin_report(coin_dirs, 10, 10), coin_report(coin_dirs, 3, 10)
    comparison = compare(base, head)
    view = build_view(head=head, base=base, comparison=comparison)
    [section] = [s for s in view.sections if s.kind == "cases"]
    coin = next(row for row in section.rows if row.name == "coin")
    p_value = verdicts(comparison)["coin"].p_value
    assert coin.verdict == "regression" and coin.transition == "broken"
    assert f"adjusted p = {p_value:.3g}" in coin.facts
    assert coin.why == "worse, adjusted p ≤ 0.05"
    assert coin.rank == 1  # right after errors, as the comment orders it


def test_the_headline_gives_repeated_cases_their_sample_pass_rate_as_evals(
        coin_dirs: Path) -> None:
    """A PR of repeated protocol cases only: the heading's one figure is the share of
    samples that passed, as for repeated evals (it counted whole cases passing)."""
    from turncheck.render.comment import comment_headline

    base, head = coin_report(coin_dirs, 10, 10), coin_report(coin_dirs, 3, 10)
    comparison = compare(base, head)
    title = comment_headline(comparison, fail_reasons(comparison, {FailOn.REGRESSION})).title
    assert "sample pass rate 100% → 65%" in title, title
    assert "cases passing" not in title
