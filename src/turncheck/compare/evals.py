"""Evals compared base → head: their sides (samples, turn of pass), transition and label,
matched by name then prompt; a suite of evals compared (with its app's model calls).
The statistical evidence behind the verdicts is `compare/evidence.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from turncheck.compare.app_changes import app_changes
from turncheck.compare.pool import outcomes_of
from turncheck.compare.rows import (
    count_rows,
    pair_rows,
    previous_path,
    row_sides,
    sample_stats,
    state_of,
    transition_of,
)
from turncheck.report.comparison import (
    AppCalls,
    Counts,
    EvalComparison,
    EvalSide,
    MatchKey,
    SuiteComparison,
    Summary,
)
from turncheck.report.results import USABLE, Status
from turncheck.report.rows import Transition
from turncheck.report.run import EvalResult, SuiteResult
from turncheck.report.spend import spend_delta, spend_or_none
from turncheck.stats.rates import turn_distribution

# --- evals ------------------------------------------------------------------------


def sample_statuses(result: EvalResult) -> list[Status]:
    return [s.status for s in result.samples] if result.samples else [result.status]


def look_outcomes(result: EvalResult) -> list[list[int | None]]:
    """`repeat: auto`: the usable outcomes of each look (none for a fixed number of
    samples)."""
    if result.repeats is None or not result.repeats.adaptive:
        return []
    looks: list[list[int | None]] = [[] for _ in range(max(s.look for s in result.samples) + 1)]
    for sample in result.samples:
        if sample.status in USABLE:
            looks[sample.look].append(
                sample.passed_on_turn if sample.status is Status.PASS else None)
    return looks


def eval_side(result: EvalResult) -> EvalSide:
    outcomes = outcomes_of(result)
    prompts, tools = result.app_requests()
    return EvalSide(
        **result.spend.model_dump(), status=result.status, passed_on_turn=result.passed_on_turn,
        turns=len(result.turns), failed_on_turn=result.failed_on_turn, error=result.error,
        line=result.line,
        **sample_stats(sample_statuses(result), result.reason),
        turn_of_pass=turn_distribution(outcomes),
        looks=[turn_distribution(look) for look in look_outcomes(result)],
        paired=result.repeats.paired if result.repeats is not None else None,
        max_repeat=result.repeats.max_repeat
        if result.repeats is not None and result.repeats.adaptive else None,
        app_model_calls=None if (counted := result.app_calls()) is None else counted[0],
        app_prompts=prompts, app_tools=tools,
    )


def distribution_outcomes(turn_of_pass: Mapping[str, int]) -> list[int | None]:
    return [None if key == "fail" else int(key)
            for key, count in turn_of_pass.items() for _ in range(count)]


def side_outcomes(side: EvalSide) -> list[int | None]:
    """The side's samples as outcomes, rebuilt from its turn-of-pass distribution."""
    return distribution_outcomes(side.turn_of_pass)


def side_looks(side: EvalSide) -> list[list[int | None]]:
    """The side's outcomes per look; one look holding every sample when not adaptive."""
    if not side.looks:
        return [side_outcomes(side)]
    return [distribution_outcomes(look) for look in side.looks]


NOT_LIKE_FOR_LIKE = "not like-for-like"
"""The verdict cause of an eval whose simulated user changed: it is not tested."""


def simulator_change(base: EvalResult | None, head: EvalResult | None) -> str | None:
    """Why a simulated user's eval is not like-for-like at base and head (its simulator's
    model, prompt, temperature, seed or brief changed); None when it is."""
    if base is None or head is None or (base.simulator is None and head.simulator is None):
        return None
    if base.simulator is None or head.simulator is None:
        return "one side has a simulated user, the other not"
    changed = [name.replace("prompt_version", "prompt")
               for name in head.simulator.differences(base.simulator)]
    if not changed:
        return None
    return f"the simulator's {', '.join(changed)} changed"


def eval_transition(base: EvalResult | None, head: EvalResult | None) -> Transition:
    return transition_of(
        base.status if base else None, head.status if head else None,
        turns=(base.passed_on_turn if base else None, head.passed_on_turn if head else None),
        like_for_like=simulator_change(base, head) is None)


def _label(transition: Transition, base: EvalResult | None, head: EvalResult | None) -> str:
    if transition is Transition.NOT_LIKE_FOR_LIKE:
        return f"{transition.value}: {simulator_change(base, head)}"
    if transition is Transition.TURN_CHANGED and base is not None and head is not None:
        return f"turn changed {base.passed_on_turn}→{head.passed_on_turn}"
    return transition.value


def _is_regression(transition: Transition, base: EvalResult | None,
                   head: EvalResult | None) -> bool:
    if transition is Transition.BROKEN:
        return True
    if transition is not Transition.TURN_CHANGED or base is None or head is None:
        return False
    return (head.passed_on_turn or 0) > (base.passed_on_turn or 0)


def compare_evals(suite_path: str, base: EvalResult | None, head: EvalResult | None,
                  matched_by: MatchKey | None = None) -> EvalComparison:
    shown = head if head is not None else base
    assert shown is not None, "an eval comparison needs at least one side"
    transition = eval_transition(base, head)
    renamed = base is not None and head is not None and base.name != head.name
    sides = row_sides(base, head, eval_side)
    base_side, head_side = sides["base"], sides["head"]
    return EvalComparison(
        suite_path=suite_path, name=shown.name, prompt=shown.prompt, **sides,
        transition=transition, label=_label(transition, base, head),
        regression=_is_regression(transition, base, head), matched_by=matched_by,
        previous_name=base.name if renamed and base is not None else None,
        turns_delta=head_side.turns - base_side.turns if head_side and base_side else None,
        not_like_for_like=simulator_change(base, head),
    )


MATCH_KEYS: tuple[MatchKey, ...] = ("name", "prompt")
EvalPair = tuple[EvalResult | None, EvalResult | None, MatchKey | None]


def match_evals(base: Sequence[EvalResult], head: Sequence[EvalResult]) -> list[EvalPair]:
    """Head evals in order with their base match (by name, then prompt), then removed ones."""
    return pair_rows(base, head, MATCH_KEYS)


# --- suites -----------------------------------------------------------------------


def count(evals: Iterable[EvalComparison]) -> Counts:
    return count_rows(evals, Counts(), "evals")


def compare_suites(base: SuiteResult | None, head: SuiteResult | None,
                   deleted_in_pr: bool = False) -> SuiteComparison:
    shown = head if head is not None else base
    assert shown is not None, "a suite comparison needs at least one side"
    pairs = match_evals(base.evals if base else [], head.evals if head else [])
    evals = [compare_evals(shown.path, b, h, key) for b, h, key in pairs]
    base_spend = spend_or_none(base)
    head_spend = spend_or_none(head)
    return SuiteComparison(
        path=shown.path, previous_path=previous_path(base, head),
        state=state_of(base, head), name=shown.name, model=shown.model,
        deleted_in_pr=deleted_in_pr and head is None, evals=evals,
        totals=Summary(base=base_spend, head=head_spend,
                       delta=spend_delta(base_spend, head_spend), counts=count(evals)),
        app_calls=app_calls_of(base, head),
        app_changes=app_changes((b, h) for b, h, _ in pairs),
    )


def app_calls_of(base: SuiteResult | None, head: SuiteResult | None) -> AppCalls | None:
    """The model calls an app target made on each side and the turns they were made in;
    None when neither side's conversations were with an app."""
    base_counted = base.app_calls() if base is not None else None
    head_counted = head.app_calls() if head is not None else None
    if base_counted is None and head_counted is None:
        return None
    base_calls, base_turns = base_counted or (None, None)
    head_calls, head_turns = head_counted or (None, None)
    return AppCalls(base_calls=base_calls, base_turns=base_turns, head_calls=head_calls,
                    head_turns=head_turns)


