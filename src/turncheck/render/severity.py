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
from dataclasses import dataclass
from enum import StrEnum

from turncheck.compare.policy import FailOn, FailReason
from turncheck.render.display import SHOWN_K
from turncheck.report.comparison import ComparedRow, Comparison
from turncheck.report.protocol_comparison import ScorerChange
from turncheck.report.results import Status
from turncheck.report.rows import ComparedSide


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


def eval_group(item: ComparedRow) -> Group:
    """The group of a row of any kind: error or not run, else its verdict's."""
    head, cause = item.head_status, item.verdict_cause
    if head is Status.ERROR or cause == "errors":
        return Group.ERROR
    if head is Status.SKIPPED or cause in ("budget", "skipped"):
        return Group.NOT_RUN  # a budget stopped it: neither a pass nor a fail
    if item.not_like_for_like is not None:
        return Group.NOT_LIKE_FOR_LIKE
    group = _BY_VERDICT.get(item.verdict.value)
    return _quiet(head) if group is None else group


def _quiet(head: Status | None) -> Group:
    return Group.STILL_FAILING if head is Status.FAIL else Group.UNCHANGED


def row_change(item: ComparedRow) -> str:
    """What happened to a row of any kind; a protocol case that passed at base adds the
    turn and scorer that fell the most."""
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
    change = _status_change(base, head)
    fell = base is not None and base.status is Status.PASS and head.status is not Status.PASS
    drop = broke_on(item) if fell else None
    return change if drop is None else f"{change} · {drop}"


def _status_change(base: ComparedSide | None, head: ComparedSide) -> str:
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


def _not_run(turns: int | None) -> str:
    if turns is None:  # a protocol case: its turns are compared one by one
        return "not run: a budget stopped it"
    if not turns:
        return "not run: a budget stopped it before its first turn"
    return f"not run: a budget stopped it after turn {turns} (the next turn was never sent)"


def _repeated_change(base: ComparedSide | None, head: ComparedSide) -> str:
    """A repeated eval's status change: its samples pass on different turns, so no single
    turn is named (the evidence gives their distribution)."""
    now = _status_word(head.status)
    if base is None:
        return f"new: {now}"
    if base.status is head.status:
        return now
    return f"now {now} (was: {_status_word(base.status)})"


_STATUS_WORD: dict[Status | None, str] = {Status.PASS: "passes", Status.FAIL: "fails",
                                          Status.SKIPPED: "skipped (budget)"}


def _status_word(status: Status | None) -> str:
    return _STATUS_WORD.get(status, "errors")


def _outcome(status: Status | None, passed_on: int | None, turns: int | None,
             failed_on: int | None = None) -> str:
    """An eval's outcome names its turn; a protocol case's (no turn of pass) only passes
    or fails."""
    if status is Status.PASS:
        return "passes" if passed_on is None else f"passes on turn {passed_on}"
    if status is Status.FAIL and turns is None:
        return "fails"
    if status is Status.FAIL and failed_on is not None:  # scripted turns
        return f"fails on turn {failed_on} of {turns}"
    if status is Status.FAIL:
        return f"fails after {turns} turn{'' if turns == 1 else 's'}"
    if status is Status.SKIPPED:
        return "skipped (budget): a live call could have crossed the budget"
    return "errors"


def _evidence(item: ComparedRow) -> str | None:
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
    if base.mean_score is not None and head.mean_score is not None:
        text = f"mean score {base.mean_score:.2f} → {head.mean_score:.2f}, {text}"
    parts = [text]
    if item.p_value is not None:
        parts.append(p_values(item))
    if changed := _pass_k_change(base, head):
        parts.append(changed)
    if head.turn_of_pass:
        parts.append(f"turn of pass: base {_turns(base.turn_of_pass)} → "
                     f"head {_turns(head.turn_of_pass)}")
    return " · ".join(parts)


def p_values(item: ComparedRow) -> str:
    """`adjusted p = 0.004 (raw p = 0.001)`: the verdict `regression` is decided on the
    first, `likely-regression` on the second."""
    adjusted = f"adjusted p {_p(item.p_value)}"
    return adjusted if item.p_raw is None else f"{adjusted} (raw p {_p(item.p_raw)})"


def _p(value: float | None) -> str:
    return "n/a" if value is None else "< 0.001" if value < 0.001 else f"= {value:.2g}"


def _rate(side: ComparedSide) -> str:
    if not side.samples:
        return "n/a"
    return f"{side.passes / side.samples:.0%} " \
        f"[{side.pass_rate_low * 100:.0f}–{side.pass_rate_high:.0%}]"


def _pass_k_change(base: ComparedSide, head: ComparedSide) -> str:
    """`pass^2 0.90 → 0.30, pass^4 0.81 → 0.05`: pass^k (k ≥ 2) on both sides, for the k
    both sides can estimate."""
    ks = [k for k in SHOWN_K if k in head.pass_hat_k and k in base.pass_hat_k]
    return ", ".join(f"pass^{k} {base.pass_hat_k[k]:.2f} → {head.pass_hat_k[k]:.2f}"
                     for k in ks)


def _turns(turn_of_pass: dict[str, int]) -> str:
    return ", ".join(f"failed ×{n}" if turn == "fail" else f"{turn} ×{n}"
                     for turn, n in turn_of_pass.items()) or "none"


def _taken(side: ComparedSide) -> int:
    return side.samples + side.errored + side.skipped


def verdict_suffix(item: ComparedRow) -> str:
    """` · regression (9/10 → 2/10, adjusted p = 0.003 (raw p = 0.001))` for text tables:
    the tier when it is news, with the samples behind it (and a protocol case's mean
    scores) when repeated."""
    if item.verdict.value in ("unchanged", "new", "removed"):
        return ""
    if item.not_like_for_like is not None:
        return ""  # not tested: its label says why
    label = f" · {item.verdict.value}"
    base, head = item.base, item.head
    if item.p_value is None or base is None or head is None \
            or max(base.samples, head.samples) <= 1:
        return label
    figures = f"{base.passes}/{base.samples} → {head.passes}/{head.samples}, {p_values(item)}"
    if base.mean_score is not None and head.mean_score is not None:
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


def _row_finding(suite: str, path: str, item: ComparedRow) -> Finding:
    """One row of any kind (the turns it passed on: an eval's)."""
    base, head = item.base, item.head
    return Finding(
        group=eval_group(item), kind=item.kind.value, suite=suite, path=path,
        name=item.name, line=item.line, change=row_change(item),
        base_cost=base.total_cost_usd if base else None,
        head_cost=head.total_cost_usd if head else None, has_base=base is not None,
        flaky=item.flaky, evidence=_evidence(item), error=item.error,
        head_failed=item.head_status is Status.FAIL,
        base_turn=base.passed_on_turn if base else None,
        head_turn=head.passed_on_turn if head else None,
        head_turns=(head.turns or 0) if head else 0)


def _eval_findings(comparison: Comparison) -> Iterator[Finding]:
    for suite in comparison.suites:
        yield from (_row_finding(suite.name, suite.path, item) for item in suite.evals)


def _case_findings(comparison: Comparison) -> Iterator[Finding]:
    for suite in comparison.protocols.suites if comparison.protocols else []:
        yield from (_row_finding(suite.name, suite.path, case) for case in suite.cases)


def change_with_evidence(item: ComparedRow) -> str:
    """What happened to a row, with the statistics behind its verdict."""
    change = row_change(item)
    evidence = _evidence(item)
    return change if evidence is None else f"{change} ({evidence})"


def broke_on(case: ComparedRow) -> str | None:
    """Which turn and scorer fell the most, base → head: `broke on turn 2: correctness
    8 → 3` (a judge scale in its own ratings, other scorers as scores); None when no
    scorer of both sides fell."""
    fallen = [(scorer.delta, number, scorer)
              for number, turn in enumerate(case.scored_turns, 1) for scorer in turn.scorers
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
