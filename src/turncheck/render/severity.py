"""What a reviewer must see first: every eval and protocol case sorted into one group.

The group comes from the comparison's statistical verdict when it has one (`verdict`:
regression, likely-regression, improvement, unchanged, inconclusive,
unreliable-baseline, new, removed, and the one-sample transitions broken, fixed,
later-turn, earlier-turn) and otherwise from the base → head transition. Rows that
errored, or could not be judged because samples errored, are `error` (infrastructure,
not a verdict). A suite whose evals together got worse (the suite-level test) is a
finding of its own, kind `suite`. The comment, the step summary, the check run and the
annotations all read these groups, in this order of severity.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from turncheck.compare.policy import FailOn, FailReason
from turncheck.render.table_model import SHOWN_K
from turncheck.report.comparison import Comparison, EvalComparison, EvalSide
from turncheck.report.protocol_comparison import CaseComparison, CaseSide, ScorerChange
from turncheck.report.rows import SampleSide
from turncheck.report.run import Status


class Group(StrEnum):
    ERROR = "error"
    REGRESSION = "regression"
    BROKEN = "broken"
    LIKELY_REGRESSION = "likely-regression"
    LATER_TURN = "later-turn"
    NOT_RUN = "not-run"
    NOT_LIKE_FOR_LIKE = "not-like-for-like"
    IMPROVEMENT = "improvement"
    FIXED = "fixed"
    EARLIER_TURN = "earlier-turn"
    INCONCLUSIVE = "inconclusive"
    UNRELIABLE_BASELINE = "unreliable-baseline"
    NEW = "new"
    REMOVED = "removed"
    STILL_FAILING = "still-failing"
    UNCHANGED = "unchanged"


ORDER = list(Group)
ICON = {
    Group.ERROR: "💥", Group.REGRESSION: "🔻", Group.LIKELY_REGRESSION: "🔸",
    Group.IMPROVEMENT: "🔺", Group.BROKEN: "🔴", Group.FIXED: "🟢",
    Group.LATER_TURN: "⏬", Group.EARLIER_TURN: "⏫", Group.INCONCLUSIVE: "❔",
    Group.UNRELIABLE_BASELINE: "⚠️", Group.NOT_RUN: "⏭️", Group.NOT_LIKE_FOR_LIKE: "⚖️",
    Group.NEW: "🆕", Group.REMOVED: "🗑️", Group.STILL_FAILING: "❌", Group.UNCHANGED: "⚪",
}
TITLE = {
    Group.ERROR: "Not judged: errors (infrastructure, not the model)",
    Group.NOT_RUN: "Not run: budget stop", Group.REGRESSION: "Regressions",
    Group.NOT_LIKE_FOR_LIKE: "Not like-for-like: the simulated user changed (nothing blamed on "
                             "the app)",
    Group.LIKELY_REGRESSION: "Likely regressions", Group.IMPROVEMENT: "Improvements",
    Group.BROKEN: "Broke", Group.FIXED: "Fixed", Group.LATER_TURN: "Later turn",
    Group.EARLIER_TURN: "Earlier turn",
    Group.INCONCLUSIVE: "Inconclusive", Group.UNRELIABLE_BASELINE: "Unreliable baseline",
    Group.NEW: "New", Group.REMOVED: "Removed", Group.STILL_FAILING: "Still failing",
    Group.UNCHANGED: "Unchanged",
}
NEWS = (Group.ERROR, Group.REGRESSION, Group.BROKEN, Group.LIKELY_REGRESSION,
        Group.LATER_TURN, Group.NOT_RUN, Group.NOT_LIKE_FOR_LIKE, Group.IMPROVEMENT, Group.FIXED,
        Group.EARLIER_TURN, Group.INCONCLUSIVE, Group.UNRELIABLE_BASELINE, Group.NEW, Group.REMOVED)
"""Groups that are news; still-failing and unchanged evals are not."""

_BY_VERDICT = {
    "regression": Group.REGRESSION, "likely-regression": Group.LIKELY_REGRESSION,
    "improvement": Group.IMPROVEMENT, "inconclusive": Group.INCONCLUSIVE,
    "unreliable-baseline": Group.UNRELIABLE_BASELINE, "new": Group.NEW,
    "removed": Group.REMOVED, "broken": Group.BROKEN, "fixed": Group.FIXED,
    "later-turn": Group.LATER_TURN, "earlier-turn": Group.EARLIER_TURN,
}


@dataclass(frozen=True)
class Finding:
    """One eval or protocol case, as the reviewer reads it."""

    group: Group
    kind: str
    """"eval", "case" or "suite" (a suite-level verdict)."""
    suite: str
    path: str
    name: str
    line: int | None
    change: str
    """What happened, e.g. "now passes on turn 3 (was 1)"."""
    base_cost: float | None
    head_cost: float | None
    has_base: bool
    flaky: bool = False
    evidence: str | None = None
    """The statistics behind the verdict, e.g. "9/10 → 2/10 passes, p = 0.003"."""
    error: str | None = None
    base_turn: int | None = None
    head_turn: int | None = None
    head_failed: bool = False
    """The head eval or case failed (not errored, not skipped)."""
    head_turns: int = 0
    """Turns the head conversation took (a budget-stopped one: the turns before it)."""

    @property
    def icon(self) -> str:
        return ICON[self.group]


WORSE = (Group.REGRESSION, Group.BROKEN, Group.LIKELY_REGRESSION, Group.LATER_TURN)
_GATED_GROUPS = {
    FailOn.REGRESSION: (Group.REGRESSION,), FailOn.BROKEN: (Group.BROKEN,),
    FailOn.LATER_TURN: (Group.LATER_TURN,), FailOn.LIKELY_REGRESSION: WORSE,
    FailOn.ERROR: (Group.ERROR,),
}


def fails_check(finding: Finding, conditions: Collection[FailOn]) -> bool:
    """Whether `finding` is one of the rows that make the check fail under `conditions`
    (the fail-on conditions that fired)."""
    if any(finding.group in _GATED_GROUPS.get(c, ()) for c in conditions):
        return True
    return (FailOn.FLAKY in conditions and finding.flaky) or \
        (FailOn.FAILURE in conditions and finding.head_failed)


def fired(reasons: Sequence[str]) -> list[FailOn]:
    """The conditions behind the check's fail reasons, in order (a reason made outside
    `fail_reasons`, plain text, names none)."""
    return list(dict.fromkeys(r.condition for r in reasons if isinstance(r, FailReason)))


def eval_group(item: EvalComparison | CaseComparison) -> Group:
    """The group of an eval or a protocol case: error or not run, else its verdict's."""
    head, cause = item.head_status, item.verdict_cause
    if head is Status.ERROR or cause == "errors":
        return Group.ERROR
    if head is Status.SKIPPED or cause in ("budget", "skipped"):
        return Group.NOT_RUN  # a budget stopped it: neither a pass nor a fail
    if isinstance(item, EvalComparison) and item.not_like_for_like is not None:
        return Group.NOT_LIKE_FOR_LIKE
    group = _BY_VERDICT.get(item.verdict.value)
    return _quiet(head) if group is None else group


def _quiet(head: Status | None) -> Group:
    return Group.STILL_FAILING if head is Status.FAIL else Group.UNCHANGED


def eval_change(item: EvalComparison) -> str:
    base, head = item.base, item.head
    if head is None:
        return "removed"
    if head.status is Status.ERROR:
        return f"errors: {item.error or head.error or 'unknown error'}"
    if base is not None and item.verdict_cause == "errors":
        return f"base errors ({base.errored} of {base.errored + base.samples} samples)" \
            ": not judged"
    if head.status is Status.SKIPPED:
        return _not_run(head.turns)
    if item.not_like_for_like is not None:
        return f"not like-for-like: {item.not_like_for_like}; no verdict on the app"
    if _taken(head) > 1 or (base is not None and _taken(base) > 1):
        return _repeated_change(base, head)
    now = _outcome(head.status, head.passed_on_turn, head.turns, head.failed_on_turn)
    if base is None:
        return f"new: {now}"
    if base.status is head.status and base.passed_on_turn == head.passed_on_turn:
        return now
    if base.status is Status.PASS and head.status is Status.PASS:
        return f"now passes on turn {head.passed_on_turn} (was {base.passed_on_turn})"
    was = _outcome(base.status, base.passed_on_turn, base.turns, base.failed_on_turn)
    return f"now {now} (was: {was})"


def _not_run(turns: int) -> str:
    if not turns:
        return "not run: a budget stopped it before its first turn"
    return f"not run: a budget stopped it after turn {turns} (the next turn was never sent)"


def _repeated_change(base: EvalSide | None, head: EvalSide) -> str:
    """A repeated eval's status change: its samples pass on different turns, so no single
    turn is named (the evidence gives their distribution)."""
    now = _status_word(head.status)
    if base is None:
        return f"new: {now}"
    if base.status is head.status:
        return now
    return f"now {now} (was: {_status_word(base.status)})"


def _status_word(status: Status) -> str:
    return {Status.PASS: "passes", Status.FAIL: "fails", Status.ERROR: "errors",
            Status.SKIPPED: "skipped (budget)"}[status]


def _outcome(status: Status, passed_on: int | None, turns: int,
             failed_on: int | None = None) -> str:
    if status is Status.PASS:
        return f"passes on turn {passed_on}"
    if status is Status.FAIL and failed_on is not None:  # scripted turns
        return f"fails on turn {failed_on} of {turns}"
    if status is Status.FAIL:
        return f"fails after {turns} turn{'' if turns == 1 else 's'}"
    if status is Status.SKIPPED:
        return "skipped (budget): a live call could have crossed the budget"
    return "errors"


def _evidence(item: EvalComparison | CaseComparison) -> str | None:
    """The statistics behind a repeated row's verdict: the pass rate base → head with its
    95 % interval, both p-values labelled, and (evals) the turn-of-pass distribution:
    `pass rate 100% [84–100%] → 45% [26–66%] (20/20 → 9/20 samples) · adjusted p =
    0.0004 (raw p = 0.0001) · turn of pass: base 1 ×20 → head 1 ×7, 2 ×2, failed ×11`.
    A protocol case leads with its mean score."""
    base, head = item.base, item.head
    if base is None or head is None:
        return None
    if max(_taken(base), _taken(head)) <= 1:  # one sample a side: no news
        return None
    text = f"pass rate {_rate(base)} → {_rate(head)} " \
        f"({base.passes}/{base.samples} → {head.passes}/{head.samples} samples)"
    unusable = [f"{side} {n} {what}" for side, found in (("base", base), ("head", head))
                for n, what in ((found.errored, "errored"), (found.skipped, "skipped")) if n]
    if unusable:
        text += f" ({', '.join(unusable)}: not counted)"
    if isinstance(item, CaseComparison) and isinstance(base, CaseSide) \
            and isinstance(head, CaseSide) and None not in (base.mean_score, head.mean_score):
        text = f"mean score {base.mean_score:.2f} → {head.mean_score:.2f}, {text}"
    parts = [text]
    if item.p_value is not None:
        parts.append(p_values(item))
    if changed := _pass_k_change(base, head):
        parts.append(changed)
    if isinstance(base, EvalSide) and isinstance(head, EvalSide) and head.turn_of_pass:
        parts.append(f"turn of pass: base {_turns(base.turn_of_pass)} → "
                     f"head {_turns(head.turn_of_pass)}")
    return " · ".join(parts)


def p_values(item: EvalComparison | CaseComparison) -> str:
    """`adjusted p = 0.004 (raw p = 0.001)`: the verdict `regression` is decided on the
    first, `likely-regression` on the second."""
    adjusted = f"adjusted p {_p(item.p_value)}"
    return adjusted if item.p_raw is None else f"{adjusted} (raw p {_p(item.p_raw)})"


def _p(value: float | None) -> str:
    return "n/a" if value is None else "< 0.001" if value < 0.001 else f"= {value:.2g}"


def _rate(side: SampleSide) -> str:
    if not side.samples:
        return "n/a"
    return f"{side.passes / side.samples:.0%} " \
        f"[{side.pass_rate_low * 100:.0f}–{side.pass_rate_high:.0%}]"


def _pass_k_change(base: SampleSide, head: SampleSide) -> str:
    """`pass^2 0.90 → 0.30, pass^4 0.81 → 0.05`: pass^k (k ≥ 2) on both sides, for the k
    both sides can estimate."""
    ks = [k for k in SHOWN_K if k in head.pass_hat_k and k in base.pass_hat_k]
    return ", ".join(f"pass^{k} {base.pass_hat_k[k]:.2f} → {head.pass_hat_k[k]:.2f}"
                     for k in ks)


def _turns(turn_of_pass: dict[str, int]) -> str:
    return ", ".join(f"failed ×{n}" if turn == "fail" else f"{turn} ×{n}"
                     for turn, n in turn_of_pass.items()) or "none"


def _taken(side: SampleSide) -> int:
    return side.samples + side.errored + side.skipped


def verdict_suffix(item: EvalComparison | CaseComparison) -> str:
    """` · regression (9/10 → 2/10, adjusted p = 0.003 (raw p = 0.001))` for text tables:
    the tier when it is news, with the samples behind it (and a protocol case's mean
    scores) when repeated."""
    if item.verdict.value in ("unchanged", "new", "removed"):
        return ""
    if isinstance(item, EvalComparison) and item.not_like_for_like is not None:
        return ""  # not tested: its label says why
    label = f" · {item.verdict.value}"
    base, head = item.base, item.head
    if item.p_value is None or base is None or head is None \
            or max(base.samples, head.samples) <= 1:
        return label
    figures = f"{base.passes}/{base.samples} → {head.passes}/{head.samples}, {p_values(item)}"
    if isinstance(base, CaseSide) and isinstance(head, CaseSide) \
            and base.mean_score is not None and head.mean_score is not None:
        figures = f"mean score {base.mean_score:.2f} → {head.mean_score:.2f}, {figures}"
    return f"{label} ({figures})"


def findings(comparison: Comparison) -> list[Finding]:
    """Every suite-level verdict, eval and protocol case, most severe group first (document
    order within, suites first)."""
    found = [*_suite_findings(comparison), *_eval_findings(comparison),
             *_case_findings(comparison)]
    return sorted(found, key=lambda f: ORDER.index(f.group))


def _suite_findings(comparison: Comparison) -> Iterator[Finding]:
    for suite in comparison.suites:
        group = _BY_VERDICT.get(suite.verdict.value)
        if group not in (Group.REGRESSION, Group.IMPROVEMENT) or suite.pass_rate_change is None:
            continue
        judged = sum(e.base is not None and e.head is not None for e in suite.evals)
        way = "down" if suite.pass_rate_change < 0 else "up"
        yield Finding(
            group=group, kind="suite", suite=suite.name, path=suite.path,
            name=f"suite {suite.name}", line=None,
            change=f"pass rate {way} {abs(suite.pass_rate_change) * 100:.1f} points on "
                   f"average over its {judged} evals (suite-level test)",
            base_cost=None, head_cost=None, has_base=True,
            evidence=None if suite.p_value is None else f"adjusted p {_p(suite.p_value)}",
        )


def _row_finding(suite: str, path: str, item: EvalComparison | CaseComparison) -> Finding:
    """One row of either kind; an eval adds the turns it passed on."""
    base, head = item.base, item.head
    is_eval = isinstance(item, EvalComparison)
    finding = Finding(
        group=eval_group(item), kind="eval" if is_eval else "case", suite=suite, path=path,
        name=item.name, line=item.line,
        change=eval_change(item) if isinstance(item, EvalComparison)
        else _case_status_change(item),
        base_cost=base.total_cost_usd if base else None,
        head_cost=head.total_cost_usd if head else None, has_base=base is not None,
        flaky=item.flaky, evidence=_evidence(item), error=item.error,
        head_failed=item.head_status is Status.FAIL)
    if not isinstance(item, EvalComparison):
        return finding
    return replace(finding, base_turn=item.base.passed_on_turn if item.base else None,
                   head_turn=item.head.passed_on_turn if item.head else None,
                   head_turns=item.head.turns if item.head else 0)


def _eval_findings(comparison: Comparison) -> Iterator[Finding]:
    for suite in comparison.suites:
        yield from (_row_finding(suite.name, suite.path, item) for item in suite.evals)


def _case_findings(comparison: Comparison) -> Iterator[Finding]:
    for suite in comparison.protocols.suites if comparison.protocols else []:
        yield from (_row_finding(suite.name, suite.path, case) for case in suite.cases)


case_group = eval_group
"""One rule for both kinds."""


def case_change(case: CaseComparison) -> str:
    """What happened to a protocol case, with the statistics behind its verdict."""
    change = _case_status_change(case)
    evidence = _evidence(case)
    return change if evidence is None else f"{change} ({evidence})"


def _case_status_change(case: CaseComparison) -> str:
    if case.head_status is None:
        return "removed"
    if case.head_status is Status.ERROR:
        return f"errors: {case.error or 'unknown error'}"
    now = "passes" if case.head_status is Status.PASS else "fails"
    if case.base_status is None:
        return f"new: {now}"
    if case.base_status is case.head_status:
        return now
    change = f"now {now} (was: {'passes' if case.base_status is Status.PASS else 'fails'})"
    drop = broke_on(case) if case.base_status is Status.PASS else None
    return change if drop is None else f"{change} · {drop}"


def broke_on(case: CaseComparison) -> str | None:
    """Which turn and scorer fell the most, base → head: `broke on turn 2: correctness
    8 → 3` (a judge scale in its own ratings, other scorers as scores); None when no
    scorer of both sides fell."""
    fallen = [(scorer.delta, number, scorer)
              for number, turn in enumerate(case.turns, 1) for scorer in turn.scorers
              if scorer.delta is not None and scorer.delta < 0]
    if not fallen:
        return None
    _, number, scorer = min(fallen, key=lambda found: (found[0], found[1]))
    return f"broke on turn {number}: {scorer.name} {scorer_values(scorer)}"


def scorer_values(scorer: ScorerChange) -> str:
    """`8 → 3` for a judge scale's ratings, `0.86 → 0.40` for a score."""
    if scorer.base_rating is not None and scorer.head_rating is not None:
        return f"{_rating(scorer.base_rating)} → {_rating(scorer.head_rating)}"
    return f"{_score(scorer.base)} → {_score(scorer.head)}"


def _rating(value: float) -> str:
    return f"{value:g}" if value.is_integer() else f"{value:.1f}"


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
