"""Issue 44, item 8: `turncheck compare`'s tokens and cost lines count what the comment
counts and say so, and a simulated user's longer conversation is not "more follow-ups"."""

from __future__ import annotations

from tests.unit.test_compare import ev, report
from turncheck.compare.comparison import compare_reports
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.render.compare_console import comparison_lines, totals_lines
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, SuiteResult
from turncheck.report.spend import Usage, spend_totals


def suite(path: str, *evals: EvalResult) -> SuiteResult:
    return SuiteResult(path=path, name="s", model="vendor/model", provider="openrouter",
                       cassette=None, evals=list(evals),
                       **spend_totals(list(evals)))  # type: ignore[arg-type]


def judged(name: str, turns: int = 1, simulated: bool = False) -> EvalResult:
    result = ev(name, Status.PASS, turns, tokens=10, cost=0.001)
    return result.model_copy(update={
        "judge_usage": Usage(input_tokens=100, output_tokens=5), "judge_cost_usd": 0.002,
        **({"simulator_usage": Usage(input_tokens=300, output_tokens=20),
            "simulator_cost_usd": 0.004} if simulated else {})})


def console(base: EvalResult, head: EvalResult) -> list[str]:
    comparison = compare_reports(report(suite("s.yaml", base), commit="base"),
                                 report(suite("s.yaml", head)))
    return list(totals_lines(comparison))


def test_the_tokens_line_counts_model_and_judge_like_the_comment() -> None:
    lines = console(judged("a"), judged("a", turns=2))
    # model 20 → 40 tokens, judge 105 on each side
    assert "tokens (model + judge): 125 → 145 (+20)" in lines
    assert any(line.startswith("cost (model + judge): ") for line in lines)
    assert not any("simulated user" in line for line in lines)


def test_a_simulated_users_spend_is_named_in_the_cost_label_and_its_tokens_apart() -> None:
    lines = console(judged("a", simulated=True), judged("a", simulated=True))
    assert any(line.startswith("tokens (model + judge): 125 → 125 ") for line in lines)
    assert any(line.startswith("tokens (simulated user): 320 → 320 ") for line in lines)
    assert any(line.startswith("cost (model + judge + simulated user): $0.00700 → $0.00700")
               for line in lines), lines


def test_a_longer_simulated_conversation_is_not_called_more_follow_ups() -> None:
    base, head = judged("chat", 2, simulated=True), judged("chat", 4, simulated=True)
    comparison = compare_reports(report(suite("s.yaml", base), commit="base"),
                                 report(suite("s.yaml", head)))
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report(
        suite("s.yaml", head))))
    assert "4 turns instead of 2 \\(the simulated user's conversation ran longer\\)" in body
    assert "follow-ups fire" not in body


def test_scripted_follow_ups_are_still_named_as_such() -> None:
    base, head = judged("q", 1), judged("q", 3)
    comparison = compare_reports(report(suite("s.yaml", base), commit="base"),
                                 report(suite("s.yaml", head)))
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=report(
        suite("s.yaml", head))))
    assert "3 turns instead of 1 \\(more follow\\-ups fire\\)" in body


def test_a_broken_eval_reads_broken_once_and_the_legend_explains_the_verdicts() -> None:
    comparison = compare_reports(report(suite("s.yaml", judged("a")), commit="base"),
                                 report(suite("s.yaml", ev("a", Status.FAIL, 2))))
    lines = list(comparison_lines(comparison))
    row = next(line for line in lines if line.startswith("s.yaml"))
    assert "broken · broken" not in row and " broken " in row
    assert not any(line.startswith("TRANSITION is") for line in lines)


def test_a_verdict_beside_a_different_transition_is_explained_under_the_table() -> None:
    base = [ev("a", Status.FAIL, 2)] * 3
    head = [ev("a", Status.FAIL, 2), ev("a", Status.ERROR, 1), ev("a", Status.FAIL, 2)]
    comparison = compare_reports(report(suite("s.yaml", *base), commit="base"),
                                 report(suite("s.yaml", *head)))
    lines = list(comparison_lines(comparison))
    legend = [line for line in lines if line.startswith("TRANSITION is")]
    assert legend and "inconclusive: the samples cannot tell a change from noise" in legend[0]
