"""The causes "Where the change comes from" names (render/cost_causes.py), beside the
turns, the app's model calls and the judge: the simulated user, tools whose schema
changed, and longer or shorter answers when nothing else changed."""

from __future__ import annotations

from typing import Any

from turncheck.render.cost_causes import answers_change, cost_causes
from turncheck.report.comparison import EvalSide
from turncheck.report.results import Status


def side(**fields: Any) -> EvalSide:
    return EvalSide(status=Status.PASS, passed_on_turn=1, turns=2, error=None, line=1,
                    **fields)


def test_a_simulated_user_that_spends_more_is_named() -> None:
    assert cost_causes(side(simulator_tokens=400), side(simulator_tokens=250)) == [
        "the simulated user: 400 → 250 tokens"]


def test_tools_added_removed_and_changed_are_named() -> None:
    base = side(app_tools={"lookup_order": "a", "issue_refund": "b"})
    head = side(app_tools={"lookup_order": "c", "escalate": "d"})
    assert cost_causes(base, head) == [
        "tools offered: +escalate, −issue_refund, lookup_order's schema changed"]


def test_answers_alone_are_named_by_their_output_tokens() -> None:
    base = side(input_tokens=100, output_tokens=40)
    assert answers_change(base, side(input_tokens=100, output_tokens=55)) == \
        "longer answers (+15 output tokens)"
    assert answers_change(base, side(input_tokens=100, output_tokens=30)) == \
        "shorter answers (−10 output tokens)"
    assert answers_change(base, side(input_tokens=120, output_tokens=55)) == \
        "longer or shorter answers"
