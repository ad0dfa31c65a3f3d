"""Visual regression test of the PR comment: fixed scenarios rendered and compared with
committed golden Markdown files (`tests/golden/comment/*.md`), so every change to the
comment is reviewed as a diff. Each golden is also rendered with cmark-gfm (GitHub's
CommonMark + GFM renderer) and checked for what a reader would notice: no autolinks
from untrusted text, every `<details>` closed, the heading first.

Regenerate after an intended change with `TURNCHECK_UPDATE_GOLDEN=1 pytest
tests/golden/test_comment_golden.py` and review the diff.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import cmarkgfm
import pytest

from tests.e2e.test_calibration_action import CRITERIA_A, CRITERIA_B, samples_text, scripted_grader
from tests.golden.test_comment_rendering import (
    PRICES,
    eval_result,
    hostile_reports,
    many_evals,
    report,
    suite,
    turn,
)
from tests.integration.test_protocol_compare import ANSWERS, JUDGE_RATINGS, run_side
from tests.support.scripted_server import ScriptedServer
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, fail_reasons
from turncheck.diagnostics import error
from turncheck.engine.repeats import RepeatPlan, combine
from turncheck.engine.runner import run_suite_files
from turncheck.engine.settings import RunSettings
from turncheck.formats.sample_loader import load_samples
from turncheck.github.publish import check_title
from turncheck.render.comment import MARKER, CommentContext, comment_markdown
from turncheck.report.calibration_comparison import CalibrationThresholds
from turncheck.report.comparison import CostThresholds
from turncheck.report.results import Status, ToolCallResult, TurnResult
from turncheck.report.run import BudgetOutcome, EvalResult, Report
from turncheck.report.spend import Usage

GOLDEN = Path(__file__).parents[1] / "golden" / "comment"
RUN_URL = "https://github.com/octo-org/widgets/actions/runs/42"
BLOB_URL = "https://github.com/octo-org/widgets/blob/" + "c" * 40 + "/"
FAIL_ON = {*DEFAULT_FAIL_ON, FailOn.CALIBRATION}
"""The action's default gate, and calibration."""
SUPPORT = "evals/support.eval.yaml"

Scenario = tuple[Report | None, Report]


def priced_turn(number: int, prompt: str, response: str, passed: bool, cost: float,
                detail: str = 'match "*30 days*"') -> TurnResult:
    built = turn(number, prompt, response, passed, detail)
    return built.model_copy(update={"cost_usd": cost,
                                    "usage": Usage(input_tokens=400 * number,
                                                   output_tokens=60)})


def support_eval(name: str, answers: list[tuple[str, bool]], cost: float, line: int) -> object:
    prompts = ["How long is the refund window?", "That is not our policy. Check again.",
               "Hint: it is in the first line of your instructions."]
    turns = [priced_turn(i + 1, prompts[i], text, ok, cost)
             for i, (text, ok) in enumerate(answers)]
    built = eval_result(name, turns, line=line)
    return built.model_copy(update={"cost_usd": cost * len(turns),
                                    "usage": Usage(input_tokens=sum(t.usage.input_tokens
                                                                    for t in turns),
                                                   output_tokens=60 * len(turns))})


def turn_regression() -> Scenario:
    wrong, right = ("Refunds are possible within 14 days.", False), ("Within 30 days.", True)
    greeting = eval_result("greeting", [turn(1, "Hi", "Hello! How can I help?", True)], line=18)
    tone = eval_result("tone", [turn(1, "Be rude", "No.", False)], line=24)
    base = [support_eval("refund-window", [right], 0.0041, 7), greeting, tone]
    head = [support_eval("refund-window", [wrong, wrong, right], 0.00382, 7), greeting, tone]
    return (report([suite(SUPPORT, "support", base)], "b" * 40),  # type: ignore[list-item]
            report([suite(SUPPORT, "support", head)], "c" * 40))  # type: ignore[list-item]


def improvement() -> Scenario:
    """The turn regression the other way round: head passes on turn 1 where base needed 3."""
    regression_base, regression_head = turn_regression()
    assert regression_base is not None
    return (regression_head.model_copy(update={"commit": "b" * 40}),
            regression_base.model_copy(update={"commit": "c" * 40}))


def new_and_removed() -> Scenario:
    old = [eval_result(f"legacy {i}", [turn(1, f"q{i}", "a", True)], line=3 + 4 * i)
           for i in range(2)]
    new = [eval_result("billing address", [turn(1, "Change my address", "Done.", True)]),
           eval_result("invoice copy", [turn(1, "Send my invoice", "I can't.", False)], line=11)]
    return (report([suite("evals/legacy.eval.yaml", "legacy", old)], "b" * 40),
            report([suite("evals/billing.eval.yaml", "billing", new)], "c" * 40))


def invalid_files() -> Scenario:
    passing = [eval_result("greeting", [turn(1, "Hi", "Hello!", True)])]
    problems = [
        error("evals/broken.eval.yaml", 4, 5, "unknown-key",
              'unknown key "mtch" (did you mean "match"?)'),
        *[error(f"evals/deep{i}.eval.yaml", 31, 11, "max-depth",
                "follow-up nested 6 levels deep; at most 5 nested levels are allowed")
          for i in range(3)],
    ]
    return (report([suite("evals/ok.eval.yaml", "ok", passing)], "b" * 40),
            report([suite("evals/ok.eval.yaml", "ok", passing)], "c" * 40, problems))


def three_hundred_evals() -> Scenario:
    return many_evals(300, 60, suites=20)


def hostile() -> Scenario:
    return hostile_reports()


def calibration_drop(tmp_path: Path, server: ScriptedServer) -> Scenario:
    server.add_rule(scripted_grader)
    sides = []
    for commit, criteria in (("b" * 40, CRITERIA_A), ("c" * 40, CRITERIA_B)):
        path = tmp_path / commit[:1] / "graders" / "support.samples.toml"
        path.parent.mkdir(parents=True)
        path.write_text(samples_text(server.base_url, criteria), encoding="utf-8")
        loaded = load_samples(path, "graders/support.samples.toml")
        sides.append(_run_samples(loaded, commit))
    return sides[0], sides[1]


def _run_samples(loaded: object, commit: str) -> Report:
    import asyncio
    settings = RunSettings(mode="live", price_timestamp=PRICES.timestamp, commit=commit)
    return asyncio.run(run_suite_files([], settings, samples=[loaded]))  # type: ignore[list-item]


def protocol_change(tmp_path: Path, server: ScriptedServer) -> Scenario:
    import copy
    base = run_side(tmp_path, server, ANSWERS, JUDGE_RATINGS, "base")
    head_answers = copy.deepcopy(ANSWERS)
    head_answers["CASE-B"][2] = "- CD3+ T cells\n- B cells\n- NK cells"
    head = run_side(tmp_path, server, head_answers, {**JUDGE_RATINGS, "CASE-C": "no JSON"},
                    "head")
    return base, head


CAPITAL = ("What is the capital of France?", "Paris.")
REFUND = ("How long is the refund window?", "Refunds within 30 days.",
          "Refunds within 14 days.")
TONE = ("A customer is angry about a late parcel. Reply.",
        "I am sorry your parcel is late; here is what I will do.", "Calm down.")


def repeated(name: str, outcomes: str, prompt: str, good: str, bad: str,
             line: int) -> EvalResult:
    """An eval sampled `len(outcomes)` times: `1`/`2` passes on that turn, `x` fails after
    two turns (combined as the engine combines samples, `min_pass: 15`)."""
    samples = []
    for outcome in outcomes:
        if outcome == "1":
            turns = [turn(1, prompt, good, True, '"*30 days*" or polite')]
        else:
            second = outcome == "2"
            turns = [turn(1, prompt, bad, False, '"*30 days*" or polite'),
                     turn(2, "Please check again.", good if second else bad, second,
                          '"*30 days*" or polite')]
        samples.append(eval_result(name, turns, line=line))
    return combine(samples, RepeatPlan(len(samples), len(samples), 15), 7)


def repeats() -> Scenario:
    """Twenty samples a side: one eval drops from 20/20 to 9/20 (a regression), another is
    flaky at head as it was at base (under `fail-on: flaky` it fails the check too), a
    third passes every sample on turn 1."""
    capital = ("capital", "1" * 20, *CAPITAL, "Lyon.", 3)
    base = [repeated(*capital),
            repeated("refund-window", "1" * 18 + "22", *REFUND, 8),
            repeated("tone", "1" * 17 + "2xx", *TONE, 14)]
    head = [repeated(*capital),
            repeated("refund-window", "1" * 7 + "22" + "x" * 11, *REFUND, 8),
            repeated("tone", "1" * 16 + "2xxx", *TONE, 14)]
    return (report([suite(SUPPORT, "support", base)], "b" * 40),
            report([suite(SUPPORT, "support", head)], "c" * 40))


def stopped(result: EvalResult) -> EvalResult:
    return result.model_copy(update={"status": Status.SKIPPED, "passed_on_turn": None,
                                     "reason": "budget"})


def budget_stop() -> Scenario:
    """A cost budget stops the head run: six evals ran, one stopped after its first turn
    (its follow-up was never sent) and one before its first call."""
    def evals(stop: bool) -> list[EvalResult]:
        found = [eval_result(f"faq {i}", [turn(1, f"question {i}", "Paris", True)],
                             line=3 + 4 * i) for i in range(6)]
        follow_up = eval_result("refund follow-up", [
            turn(1, REFUND[0], REFUND[2], False, '"*30 days*"'),
            turn(2, "Please check again.", REFUND[1], True, '"*30 days*"')], line=27)
        last = eval_result("tone", [turn(1, TONE[0], TONE[1], True)], line=31)
        if stop:
            follow_up = stopped(eval_result("refund follow-up", follow_up.turns[:1], line=27))
            last = stopped(last.model_copy(update={"turns": [], "usage": Usage(),
                                                   "cost_usd": 0.0}))
        return [*found, follow_up, last]

    head = report([suite(SUPPORT, "support", evals(True))], "c" * 40).model_copy(
        update={"budgets": [BudgetOutcome(scope="run", max_cost_usd=0.0007, spent_usd=0.00069,
                                          refused_calls=2)]})
    return report([suite(SUPPORT, "support", evals(False))], "b" * 40), head


OUTAGE = ("provider unreachable: POST https://api.openai.com/v1/chat/completions: "
          "503 Service Unavailable (after 3 attempts)")


def outage() -> Scenario:
    """The head's provider is down: every eval errors before its first answer; base
    passed."""
    def evals(down: bool) -> list[EvalResult]:
        found = []
        for i, (name, prompt, answer) in enumerate(
                [("capital", *CAPITAL), ("refund-window", *REFUND[:2]),
                 ("tone", *TONE[:2]), ("greeting", "Hi", "Hello!")]):
            made = eval_result(name, [turn(1, prompt, answer, True)], line=3 + 6 * i,
                               error_text=OUTAGE if down else None)
            found.append(made.model_copy(update={"turns": [], "passed_on_turn": None,
                                                 "usage": Usage(), "cost_usd": 0.0})
                         if down else made)
        return found

    return (report([suite(SUPPORT, "support", evals(False))], "b" * 40),
            report([suite(SUPPORT, "support", evals(True))], "c" * 40))


def tool_calls() -> Scenario:
    """The weather example (examples/weather): at head the assistant asks for today's
    weather instead of tomorrow's forecast, twice, and the tool check fails."""
    question = "Do I need an umbrella in Lyon tomorrow?"
    follow_up = "I asked about tomorrow. Please check the forecast."
    forecast = ToolCallResult(round=1, name="get_forecast",
                              arguments={"city": "Lyon", "day": "tomorrow"},
                              result='{"city": "Lyon", "day": "tomorrow", "sky": "rain", '
                                     '"chance_of_rain": 0.8}')
    today = ToolCallResult(round=1, name="get_weather", arguments={"city": "Lyon"},
                           result='{"city": "Lyon", "sky": "cloudy", "celsius": 15}')
    check = 'tool_call get_forecast args {"city": "Lyon", "day": "tomorrow"}'

    def called(number: int, prompt: str, answer: str, call: ToolCallResult) -> TurnResult:
        made = turn(number, prompt, answer, call is forecast, check)
        return made.model_copy(update={"tool_calls": [call], "rounds": 2})

    base = eval_result("umbrella tomorrow", [
        called(1, question, "Yes: rain is likely in Lyon tomorrow (80 %).", forecast)], line=44)
    head = eval_result("umbrella tomorrow", [
        called(1, question, "Lyon is cloudy at 15 °C.", today),
        called(2, follow_up, "It is cloudy in Lyon, 15 °C.", today)], line=44)
    now = eval_result("weather now", [turn(1, "What's the weather like in Paris right now?",
                                           "Sunny, 21 °C in Paris.", True)], line=36)
    path = "examples/weather/assistant.eval.yaml"
    return (report([suite(path, "weather-assistant", [now, base])], "b" * 40),
            report([suite(path, "weather-assistant", [now, head])], "c" * 40))


def scripted_turns() -> Scenario:
    """An eval of two scripted turns (`turns:`): at head the rewrite of turn 2 breaks."""
    post = "Compose a short travel post about Hawaii."
    rewrite = "Rewrite it starting every sentence with the letter A."
    first = turn(1, post, "Hawaii: surf at dawn, poke for lunch.", True, 'match "*Hawaii*"')

    def rewritten(answer: str, passed: bool) -> EvalResult:
        built = eval_result("travel post", [first, turn(2, rewrite, answer, passed,
                                                        'match "A*"')], line=9)
        if passed:
            return built.model_copy(update={"passed_on_turn": 2})
        return built.model_copy(update={"status": Status.FAIL, "passed_on_turn": None,
                                        "failed_on_turn": 2})

    path = "evals/writing.eval.yaml"
    return (report([suite(path, "writing", [rewritten("At dawn we surf.", True)])], "b" * 40),
            report([suite(path, "writing", [rewritten("We surf at dawn.", False)])], "c" * 40))


def suite_level() -> Scenario:
    """Twenty evals each drop a little (19/20 → 16/20): no eval alone is a regression,
    the suite's stratified test is."""
    def side(passes: int) -> list[EvalResult]:
        return [repeated(f"faq {i}", "1" * passes + "x" * (20 - passes), f"question {i}",
                         "Within 30 days.", "Within 14 days.", 3 + 4 * i) for i in range(20)]

    return (report([suite("evals/faq.eval.yaml", "faq", side(19))], "b" * 40),
            report([suite("evals/faq.eval.yaml", "faq", side(16))], "c" * 40))


PLAIN: dict[str, Callable[[], Scenario]] = {
    "turn-regression-cost-growth": turn_regression,
    "improvement-cost-fall": improvement,
    "new-and-removed-suites": new_and_removed,
    "invalid-files": invalid_files,
    "300-evals-in-20-suites": three_hundred_evals,
    "hostile-output": hostile,
    "repeats-two-flaky-evals": repeats,
    "budget-stop": budget_stop,
    "outage-head-provider-down": outage,
    "tool-calls": tool_calls,
    "suite-level-regression": suite_level,
    "scripted-turns": scripted_turns,
}
SERVED: dict[str, Callable[[Path, ScriptedServer], Scenario]] = {
    "calibration-drop": calibration_drop,
    "protocol-change": protocol_change,
}


def stable(side: Report | None) -> Report | None:
    """The report with everything that differs between runs fixed (time, latency, URLs)."""
    if side is None:
        return None
    fixed = side.model_copy(deep=True, update={"price_source": PRICES,
                                               "started_at": "2026-01-02T03:04:05Z",
                                               "duration_s": 1.0})
    for result in fixed.calibrations:
        for sample in result.samples:
            sample.latency_ms = 0.0
    return fixed


GATES = {"repeats-two-flaky-evals": {*FAIL_ON, FailOn.FLAKY}}
"""Scenarios checked under another gate than FAIL_ON."""

EXPECTED_CAUSE = {
    "turn-regression-cost-growth": ("⚠️ 1 later turn", "refund-window", "cost +$"),
    "improvement-cost-fall": ("✅ 1 earlier turn", "refund-window"),
    "new-and-removed-suites": ("✅ 2 new (1 failing)", "invoice copy",
                               "evals passing 2 of 2 → 1 of 2"),
    "invalid-files": ("❌ 4 files could not run",),
    "300-evals-in-20-suites": ("❌ 20 broke", "evals passing 300 → 280 of 300"),
    "hostile-output": ("❌ 1 file could not run", "1 eval errored", "1 broke"),
    "calibration-drop": ("❌ grader calibration", "agreement 100 % → 60 %"),
    "protocol-change": ("1 protocol case errored", "clean"),
    "repeats-two-flaky-evals": ("❌ 1 regression, 2 flaky", "refund-window", "tone"),
    "budget-stop": ("⚠️ budget stopped the run", "2 of 8 evals not run"),
    "outage-head-provider-down": ("❌ 4 evals errored (not judged)", "provider unreachable"),
    "tool-calls": ("❌ 1 broke", "umbrella tomorrow"),
    "suite-level-regression": ("❌ 1 suite regression", "suite faq"),
    "scripted-turns": ("❌ 1 broke", "travel post now fails on turn 2 of 2"),
}
"""Per scenario, what its heading must say: the cause that fails the check (or, when
nothing does, the most important change), most severe first."""


def rendered(scenario: Scenario, fail_on: set[FailOn] = FAIL_ON) -> tuple[str, str]:
    base, head = (stable(side) for side in scenario)
    assert head is not None
    comparison = compare_reports(base, head, thresholds=CostThresholds(percent=20))
    reasons = fail_reasons(comparison, fail_on, calibration=CalibrationThresholds(
        min_agreement=None, max_agreement_drop=10))
    context = CommentContext(fail_reasons=reasons, head=head, base=base, run_url=RUN_URL,
                             blob_url=BLOB_URL)
    return comment_markdown(comparison, context), check_title(comparison, reasons)


def rendered_named(name: str, tmp_path: Path, server: ScriptedServer) -> tuple[str, str]:
    scenario = PLAIN[name]() if name in PLAIN else SERVED[name](tmp_path, server)
    return rendered(scenario, GATES.get(name, FAIL_ON))


def check_golden(name: str, body: str) -> None:
    path = GOLDEN / f"{name}.md"
    if os.environ.get("TURNCHECK_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with TURNCHECK_UPDATE_GOLDEN=1"
    assert body == path.read_text(encoding="utf-8"), (
        f"the comment of scenario {name!r} changed; review it and regenerate the golden "
        "file with TURNCHECK_UPDATE_GOLDEN=1")
    check_rendered_html(body)


def check_rendered_html(body: str) -> None:
    unsafe = cmarkgfm.Options.CMARK_OPT_UNSAFE  # GitHub keeps <details>, then sanitises
    html = cmarkgfm.github_flavored_markdown_to_html(body, options=unsafe)
    assert html.startswith("<!-- turncheck:comment -->\n<h2>")
    assert html.count("<details") == html.count("</details>")
    links = re.findall(r'<a href="([^"]+)"', html)
    assert all(link.startswith((RUN_URL, BLOB_URL)) for link in links), links
    assert "<script" not in html and "<!-- turncheck:comment -->" in html


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_comment_matches_its_golden_file(name: str, tmp_path: Path,
                                         scripted_server: ScriptedServer) -> None:
    body, _ = rendered_named(name, tmp_path, scripted_server)
    check_golden(name, body)


@pytest.mark.parametrize("name", sorted(SERVED))
def test_comment_with_served_results_matches_its_golden_file(
        name: str, tmp_path: Path, scripted_server: ScriptedServer) -> None:
    body, _ = rendered_named(name, tmp_path, scripted_server)
    check_golden(name, body)


def heading_of(body: str) -> str:
    """The comment's heading as GitHub shows it (Markdown escapes undone)."""
    line = body.split("\n")[1]
    assert line.startswith("## ")
    # md_cell's escapes: a backslash before punctuation, a zero-width space that keeps
    # `https://` and `@user` from becoming links or mentions.
    return re.sub(r"\\(.)", r"\1", line.removeprefix("## ")).replace("\u200b", "")


@pytest.mark.parametrize("name", sorted(EXPECTED_CAUSE))
def test_the_heading_names_the_expected_cause_and_is_the_check_title(
        name: str, tmp_path: Path, scripted_server: ScriptedServer) -> None:
    body, title = rendered_named(name, tmp_path, scripted_server)
    heading = heading_of(body)
    assert heading == title
    for said in EXPECTED_CAUSE[name]:
        assert said in heading, f"{name}: {heading!r} does not say {said!r}"
    assert len(heading) <= 120, f"{name}: a {len(heading)}-character heading"
    assert "±$0" not in heading  # no noise in the one line a reviewer reads


def test_every_scenario_declares_its_expected_cause() -> None:
    assert set(EXPECTED_CAUSE) == {*PLAIN, *SERVED}


def test_golden_files_are_exactly_the_scenarios() -> None:
    assert {p.stem for p in GOLDEN.glob("*.md")} == {*PLAIN, *SERVED}


def test_the_heading_names_the_eval_both_turns_and_the_cost_change_and_is_the_title() -> None:
    body, title = rendered(turn_regression())
    heading = body.split("\n")[1]
    # One sample per side: a later turn is a transition, never a statistical tier.
    assert heading == ("## ⚠️ 1 later turn, cost \\+\\$0.0074 \\(\\+171.2%\\) · refund\\-window "
                       "now passes on turn 3 \\(was 1\\) · evals passing 2 → 2 of 3")
    assert title == "⚠️ 1 later turn, cost +$0.0074 (+171.2%) · refund-window now passes " \
        "on turn 3 (was 1) · evals passing 2 → 2 of 3"


def test_300_evals_lead_with_regressions_capped_and_keep_the_footer() -> None:
    body, _ = rendered(three_hundred_evals())
    # Single-sample flips: transitions (docs/statistics.md), listed first.
    assert body.index("### 🔴 Broke (20)") == body.index("###")
    regressions = body.split("### 🔴 Broke (20)\n", 1)[1].split("\n\n###", 1)[0]
    assert regressions.count("- 🔴 **") == 15
    assert "- _and 5 more_ — see the [step summary](" + RUN_URL + ")" in regressions
    assert body.rstrip().endswith("</sub>") and len(body.encode()) <= 65_536


def test_invalid_files_come_first_and_the_title_does_not_claim_all_pass() -> None:
    body, title = rendered(invalid_files())
    assert body.index("### ⛔ Could not run") < body.index("<details")
    assert "[evals/broken.eval.yaml:4](" + BLOB_URL + "evals/broken.eval.yaml#L4)" in body
    assert "(×3)" in body  # identical problems collapsed with a count
    assert title.startswith("❌ 4 files could not run")
    assert "no change" not in title


def test_the_marker_is_there_once() -> None:
    for make in PLAIN.values():
        body, _ = rendered(make())
        assert body.count(MARKER) == 1


@pytest.mark.parametrize("name", sorted(PLAIN))
@pytest.mark.parametrize("gate", ["golden", "default"])
def test_console_comment_title_and_exit_code_agree(name: str, gate: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from turncheck.compare.policy import DEFAULT_FAIL_ON
    from turncheck.render.compare_console import comparison_text
    from turncheck.text.lines import one_line

    base, head = (stable(side) for side in PLAIN[name]())
    assert head is not None
    comparison = compare_reports(base, head, thresholds=CostThresholds(percent=20))
    reasons = fail_reasons(comparison, FAIL_ON if gate == "golden" else set(DEFAULT_FAIL_ON))
    body = comment_markdown(comparison, CommentContext(fail_reasons=reasons, head=head, base=base))
    title = check_title(comparison, reasons)
    console = comparison_text(comparison, reasons).splitlines()
    counts = next(line for line in body.splitlines() if line.startswith("turncheck: "))
    assert console[-2] == f"verdict: {one_line(title)}"
    assert console[-1] == one_line(counts.replace("**", ""))
    assert heading_of(body) == title
    assert title.startswith("❌") == bool(reasons)  # the exit code is 1 exactly then


def test_every_golden_comment_is_a_different_comment() -> None:
    """Two scenarios with the same golden file test one thing twice (an improvement
    scenario once rendered the regression it was built from)."""
    bodies: dict[str, str] = {}
    for path in sorted(GOLDEN.glob("*.md")):
        twin = bodies.get(path.read_text(encoding="utf-8"))
        assert twin is None, f"{path.name} is identical to {twin}"
        bodies[path.read_text(encoding="utf-8")] = path.name
    assert len(bodies) >= 8


def test_counts_lines_name_only_what_happened() -> None:
    """No "0 regressed · 0 likely · …": a count that is zero is left out of the line."""
    for path in sorted(GOLDEN.glob("*.md")):
        [counts] = [line for line in path.read_text(encoding="utf-8").splitlines()
                    if line.startswith("turncheck: ")]
        assert not re.search(r"(^|· |\*\*|🔴 |🟢 )0 ", counts.removeprefix("turncheck: ")), (
            f"{path.name}: {counts}")


def test_counts_say_eval_or_evals_not_eval_s() -> None:
    """"1 validation error", "4 evals errored": the number decides the noun's form."""
    for path in sorted(GOLDEN.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert "\\(s\\)" not in text, path.name
    assert "- ❌ 4 validation errors\n" in (GOLDEN / "invalid-files.md").read_text("utf-8")
    assert "- ❌ 1 validation error\n" in (GOLDEN / "hostile-output.md").read_text("utf-8")


def test_repeats_show_the_failing_sample_both_flaky_evals_and_labelled_p_values() -> None:
    body, title = rendered(repeats(), GATES["repeats-two-flaky-evals"])
    # Both flaky evals fail the check (one regressed, one under `fail-on: flaky`), and
    # both are listed: the second in a group of its own, though its verdict is unchanged.
    assert "- 🔻 **refund\\-window** · support · now fails \\(was: passes\\)" in body
    also = body.split("### ⛔ Also fail the check (1)\n", 1)[1].split("\n\n", 1)[0]
    assert also.startswith("- ⚪ **tone** · support · passes · pass rate 90% \\[70–97%\\]")
    # The pass rate with its interval, both p-values labelled, the turn distribution.
    assert "pass rate 100% \\[84–100%\\] → 45% \\[26–66%\\] \\(20/20 → 9/20 samples\\)" in body
    assert "adjusted p &lt; 0.001 \\(raw p &lt; 0.001\\)" in body
    assert "adjusted p = 0.42 \\(raw p = 0.42\\)" in body
    assert "turn of pass: base 1 ×18, 2 ×2 → head 1 ×7, 2 ×2, failed ×11" in body
    # A failing head sample's conversation beside a passing one, for each.
    transcripts = body.split("<details><summary>")[1:]
    refund = next(t for t in transcripts if t.startswith("🔻 refund-window"))
    assert "| Turn | Prompt | base · sample 1 ✅ | head · sample 10 of 20 ❌ |" in refund
    assert "| 2 | Please check again. | — | ❌ Refunds within 14 days. |" in refund
    tone = next(t for t in transcripts if t.startswith("⚪ tone"))
    assert "❌ Calm down." in tone
    # No "passed on turn 1 | 2 turns": a repeated eval's row gives its samples' turns.
    assert "| refund\\-window | 🔻 fail | 1 ×7, 2 ×2, ✗ ×11 | — |" in body
    assert "refund-window" in title and "tone" in title
    # The heading counts the flaky evals as the counts line and the check's reasons do:
    # the flaky regression is one of each, not "1 regression, 1 flaky" beside "2 flaky".
    assert title.startswith("❌ 1 regression, 2 flaky · ")
    assert "turncheck: **🔴 1 regressed** · 2 flaky · " in body
    assert "❌ 2 flaky evals \\(passed on some samples" in body


def test_a_budget_stop_is_not_a_regression_and_lists_the_evals_not_run() -> None:
    body, title = rendered(budget_stop())
    assert "regress" not in body.lower() and "regress" not in title.lower()
    assert title.startswith("⚠️ budget stopped the run · 2 of 8 evals not run")
    group = body.split("### ⏭️ Not run: budget stop (2)\n", 1)[1].split("\n\n", 1)[0]
    assert group.splitlines() == [
        "- ⏭️ **refund follow\\-up** · support · not run: a budget stopped it after turn 1 "
        "\\(the next turn was never sent\\); neither a pass nor a fail",
        "- ⏭️ **tone** · support · not run: a budget stopped it before its first turn; "
        "neither a pass nor a fail",
    ]
    assert "| 2 | Please check again. | ✅ Refunds within 30 days. | ⏭️ not sent: a budget " \
        "stopped the run before this turn |" in body
    assert "| tone | ⏭️ not run |" in body


def test_an_outage_is_one_short_row_of_errors_not_regressions() -> None:
    body, title = rendered(outage())
    assert title.startswith("❌ 4 evals errored (not judged)")
    group = body.split("### 💥 Not judged: errors (infrastructure, not the model) (4)\n",
                       1)[1].split("\n\n", 1)[0]
    assert group.startswith("- 💥 **capital, refund\\-window, tone, greeting** · support · "
                            "errors: provider unreachable")
    assert "regress" not in body.lower()


def test_a_new_suite_is_headed_by_the_eval_that_fails_the_check() -> None:
    """Not by the first eval of the top group: under `fail-on: failure` the failing new
    eval is what fails the check."""
    _, title = rendered(new_and_removed(), {FailOn.FAILURE})
    assert title == ("❌ 1 failing · invoice copy: fails after 1 turn · "
                     "evals passing 2 of 2 → 1 of 2")


def test_a_plain_text_reason_still_heads_with_what_got_worse() -> None:
    base, head = (stable(side) for side in turn_regression())
    assert head is not None
    comparison = compare_reports(base, head, thresholds=CostThresholds(percent=20))
    title = check_title(comparison, ["1 eval passed on a later turn"])
    assert title.startswith("❌ 1 later turn, cost +$0.0074 (+171.2%) · refund-window now")


def test_a_slowdown_does_not_head_broken_evals() -> None:
    """300 evals: 20 broke and one now passes on a later turn; the broken ones fail the
    check and head it, the later turn is counted after them."""
    base, head = three_hundred_evals()
    slow = head.model_copy(deep=True)
    last = slow.suites[0].evals[-1]
    last.turns = [turn(1, "q", "not yet", False), turn(2, "again", "done", True)]
    last.passed_on_turn = 2
    _, title = rendered((base, slow), {*FAIL_ON, FailOn.LATER_TURN})
    assert title.startswith("❌ 20 broke, 1 later turn · eval 0.0, eval 1.0 and 19 more · ")
    _, default = rendered((base, slow))
    assert default.startswith("❌ 20 broke · eval 0.0, eval 1.0 and 18 more · ")


def test_counts_of_noun_changes_are_plural_in_the_heading_and_the_counts_line() -> None:
    wrong, right = ("Refunds are possible within 14 days.", False), ("Within 30 days.", True)
    base = [support_eval(f"refund {i}", [right], 0.0041, 7 + i) for i in range(2)]
    head = [support_eval(f"refund {i}", [wrong, wrong, right], 0.00382, 7 + i)
            for i in range(2)]
    head_report = report([suite(SUPPORT, "support", head)], "c" * 40)
    comparison = compare_reports(report([suite(SUPPORT, "support", base)], "b" * 40),
                                 head_report)
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=head_report))
    heading, _, counts = body.split("\n")[1:4]
    assert heading.startswith("## ⚠️ 2 later turns"), heading
    assert "🔴 2 later turns" in counts and "later turn " not in counts, counts
