"""What the app sent differently, grouped (compare/app_changes.py) and said in a line
(render/app_changes.py): one change made in 50 evals is one entry naming a few of them;
the tool calls in order, the model, a tool's schema."""

from __future__ import annotations

from turncheck.compare.app_changes import app_changes
from turncheck.render.app_changes import change_text, where_seen
from turncheck.report.app_calls import AppCall, AppToolCall, OfferedTool
from turncheck.report.results import Status, TurnResult
from turncheck.report.run import EvalResult
from turncheck.report.spend import Usage


def call(model: str = "gpt-4o-mini", tools: dict[str, str] | None = None,
         asked: tuple[str, ...] = (), system: str = "You help.") -> AppCall:
    offered = {"lookup_order": "s1", "issue_refund": "s2"} if tools is None else tools
    return AppCall(provider="openai", api="chat", model=model, system=system,
                   system_sha256=str(hash(system)),
                   tools=[OfferedTool(name=n, schema_sha256=h) for n, h in offered.items()],
                   tool_calls=[AppToolCall(name=name, arguments={}) for name in asked])


def evaluated(name: str, *turns: list[AppCall], tokens: int = 10) -> EvalResult:
    return EvalResult(name=name, prompt="hi", status=Status.PASS, passed_on_turn=1, error=None,
                      turns=[TurnResult(turn=n, prompt="hi", response="ok", latency_ms=1,
                                        app_model_calls=len(calls), app_calls=calls,
                                        usage=Usage(input_tokens=tokens, output_tokens=0))
                             for n, calls in enumerate(turns, 1)])


def test_fifty_evals_with_the_same_change_read_as_one_line() -> None:
    pairs = [(evaluated(f"e{n}", [call()], [call()]),
              evaluated(f"e{n}", [call(tools={"lookup_order": "s1"})],
                        [call(tools={"lookup_order": "s1"})]))
             for n in range(50)]
    [change] = app_changes(pairs)
    assert (change.eval_count, change.turns, len(change.evals)) == (50, 100, 5)
    assert change_text(change) == "tools offered: −issue_refund"
    assert where_seen(change) == "in e0, e1, e2 and 47 more (50 evals, 100 turns)"


def test_tool_calls_in_order_the_model_and_a_schema_change_are_each_said() -> None:
    base = evaluated("refund", [call(asked=("lookup_order",)), call(asked=("issue_refund",)),
                                call()], tokens=30)
    changed = {"lookup_order": "s1", "issue_refund": "s3"}
    head = evaluated("refund", [call(model="gpt-4o", asked=("issue_refund",), tools=changed),
                                call(model="gpt-4o", tools=changed)], tokens=20)
    said = [change_text(c) for c in app_changes([(base, head), (None, head)])]
    assert said == ["model calls per turn 3 → 2", "model gpt-4o-mini → gpt-4o",
                    "tools offered: issue_refund's schema changed",
                    "tool calls: [lookup_order, issue_refund] → [issue_refund]",
                    "tokens per turn (mean) 30 → 20"]


def test_the_same_calls_are_no_change() -> None:
    same = evaluated("refund", [call(asked=("lookup_order",)), call()])
    assert app_changes([(same, same)]) == []
