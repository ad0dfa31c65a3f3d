"""The latency of an app's replies, base → head (docs/targets.md, "Latency"): in live
runs of the support app (official `openai` SDK) against the scripted model, each side's
median and 95th percentile per suite in the comment and the HTML report; `fail-on:
latency` fails a head whose replies come 300 ms later on every turn, by a test over all
the turns, passes the same app unchanged, and never judges a replay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import http_target
from turncheck import _api
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import FailOn, fail_reasons
from turncheck.render.html_report import render_report
from turncheck.report.comparison import CostThresholds
from turncheck.report.files import write_report
from turncheck.report.run import Report

TURNS = "".join(f"""\
  - name: chat-{number}
    turns:
      - prompt: Hello.
        checks: [{{match: "*"}}]
      - prompt: How are you?
        checks: [{{match: "*"}}]
      - prompt: Bye.
        checks: [{{match: "*"}}]
""" for number in range(1, 5))
THRESHOLD = CostThresholds(latency_percent=50)


def run_side(tmp_path: Path, name: str, delay: float) -> Report:
    folder = tmp_path / name
    folder.mkdir()
    # One turn at a time: turns at once share the app's CPU, whose contention on a loaded
    # 2-core machine would blur the 300 ms this test looks for (docs/targets.md, "Latency").
    suite = write_suite(folder, http_target({"APP_DELAY": str(delay)}) +
                        "    concurrent: false\n" + "evals:\n" + TURNS)
    with ScriptedServer(default_reply="Fine, thanks.") as server:
        report = run_paths([suite], server, "live")
    for side in report.suites:
        side.path = "bot/bot.eval.yaml"
    return report


def test_a_head_300_ms_slower_per_turn_fails_fail_on_latency_and_shows_its_quantiles(
        tmp_path: Path) -> None:
    base = run_side(tmp_path, "base", 0.1)
    head = run_side(tmp_path, "head", 0.4)
    comparison = compare_reports(base, head, thresholds=THRESHOLD)
    [suite] = comparison.suites
    assert suite.latency is not None and suite.latency.slower
    assert (suite.latency.base.turns, suite.latency.head.turns) == (12, 12)
    assert suite.latency.head.total_p50_ms - suite.latency.base.total_p50_ms >= 250
    [reason] = fail_reasons(comparison, {FailOn.LATENCY})
    assert reason.startswith("latency: support-bot's replies slower by more than 50% (median ")
    comment = _api.render_comment(comparison, head=head, base=base,
                                  fail_on="latency").replace("\\", "")
    assert "## ❌ 1 app suite slower · support-bot median " in comment
    assert "⏱️ Latency of the app's replies" in comment
    row = next(line for line in comment.splitlines() if line.startswith("| support-bot |"))
    assert "slower than 50% allows (p=" in row and "12 → 12" in row
    html = render_report(head=head, base=base, comparison=comparison)
    assert "data-latency" in html and "slower than 50% allows" in html
    # `turncheck compare`: the console's line, and the threshold the condition needs.
    for side, report in (("base", base), ("head", head)):
        write_report(tmp_path / f"{side}.json", report)
    compared = compare_cli(tmp_path, "--fail-on", "latency", "--latency-threshold-percent", "50")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "latency: support-bot: reply p50 " in compared.stdout
    assert "turncheck: failing: latency: support-bot's replies slower" in compared.stderr
    unset = compare_cli(tmp_path, "--fail-on", "latency")
    assert unset.returncode == 2
    assert "--fail-on latency needs --latency-threshold-percent" in unset.stderr


def compare_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", "compare", "base.json",
                           "head.json", *args], cwd=folder, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_same_app_unchanged_passes_and_a_replay_is_never_judged(tmp_path: Path) -> None:
    base = run_side(tmp_path, "base", 0.1)
    head = run_side(tmp_path, "head", 0.1)
    comparison = compare_reports(base, head, thresholds=THRESHOLD)
    [suite] = comparison.suites
    assert suite.latency is not None and not suite.latency.slower
    assert fail_reasons(comparison, {FailOn.LATENCY}) == []
    # A replayed side's latencies are the app's against a cassette, not today's.
    slower = run_side(tmp_path, "slower", 0.4)
    replayed = slower.model_copy(update={"mode": "replay"})
    assert compare_reports(base, replayed, thresholds=THRESHOLD).suites[0].latency is None
    assert compare_reports(base, slower, thresholds=THRESHOLD).suites[0].latency is not None
