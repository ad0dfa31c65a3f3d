"""Issue 44, item 8: a turn with two checks shows one badge in the comment's transcript,
not "✅ ✅ answer"; when its checks disagree, the badge says how many failed."""

from __future__ import annotations

from tests.unit.test_compare import ev, report, suite
from turncheck.compare.comparison import compare_reports
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.results import CheckResult, Status
from turncheck.report.run import EvalResult


def with_checks(result: EvalResult, *passed: bool) -> EvalResult:
    checks = [CheckResult(type="match", passed=ok, detail=f"match {n}")
              for n, ok in enumerate(passed)]
    turn = result.turns[0].model_copy(update={"checks": checks})
    return result.model_copy(update={"turns": [turn]})


def transcript(base: EvalResult, head: EvalResult) -> str:
    head_report = report(suite("s.yaml", head))
    comparison = compare_reports(report(suite("s.yaml", base), commit="base"), head_report)
    return comment_markdown(comparison, CommentContext(fail_reasons=[], head=head_report,
                                                     base=report(suite("s.yaml", base))))


def test_a_turn_with_two_passing_checks_has_one_badge_and_mixed_ones_say_how_many() -> None:
    base = with_checks(ev("refund", Status.PASS), True, True)
    head = with_checks(ev("refund", Status.FAIL), True, False)
    body = transcript(base, head)
    assert "| ✅ ok |" in body, body
    assert "| ❌ 1 of 2 checks failed ok |" in body, body
    assert "✅ ✅" not in body and "✅ ❌" not in body
