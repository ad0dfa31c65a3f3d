"""The browsable HTML report: one self-contained file built from the JSON report(s).

Sources, all optional but one side: the head run report, the base run report and the
comparison of the two (computed by the caller, or read from `compare --json`). Without
a comparison every row's verdict is its head status; without run reports there are no
conversations, only the verdicts.

Everything shown comes from the PR (suite text, model output) and is hostile: the page
is rendered by the sandboxed, always-autoescaping environment (`text.html_environment`),
values are never marked safe, no link is built from a value, and a Content-Security-Policy
allows only the page's own inline style and script (by hash): no network, no other script.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import files

from markupsafe import Markup

from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, fail_reasons
from turncheck.render.app_calls import (
    APP_CALLS_NOTE,
    calls_change,
    calls_in_turns,
    eval_app_calls,
)
from turncheck.render.app_changes import change_views, changed_app_suites
from turncheck.render.comment_transcript import results_by_key
from turncheck.render.console import ending_text
from turncheck.render.display import pass_k_text
from turncheck.render.headline import Headline, headline
from turncheck.render.latency import LatencyRow, latency_rows
from turncheck.render.prompt_changes import (
    SUMMARY_DIFF_LINES,
    Change,
    DiffBudget,
    Sent,
    prompt_changed,
    sent_by_key,
    setup_changes,
    text_change,
)
from turncheck.render.severity import ORDER, Group, broke_on, eval_group, findings
from turncheck.report.calibration import CalibrationFileResult, SampleGrade
from turncheck.report.comparison import ComparedRow, Comparison
from turncheck.report.protocol import CaseResult, ProtocolSuiteResult, ProtocolTurn
from turncheck.report.results import CheckResult, ConversationEnd, TurnResult
from turncheck.report.rows import Transition
from turncheck.report.run import EvalResult, Report, SuiteResult
from turncheck.report.spend import Spend, Usage
from turncheck.text.counts import counted
from turncheck.text.environment import html_environment, render_template
from turncheck.text.money import usd

MAX_TEXT_CHARS = 20_000
"""Longest prompt or response shown in full; longer ones are cut with a note."""


@dataclass(frozen=True)
class CheckView:
    passed: bool | None
    """None: could not be evaluated (or a score without a pass/fail)."""
    text: str
    depth: int = 0


@dataclass(frozen=True)
class EndingView:
    """How a simulated user's conversation ended on one side, and its `success` checks."""

    side: str
    text: str
    checks: list[CheckView]


@dataclass(frozen=True)
class TurnView:
    number: int
    prompt: str
    response: str
    checks: list[CheckView]
    passed: bool | None
    tokens: str
    cost: str
    latency: str
    app_calls: str = ""
    """An app target's turn: how many model calls the app made (its tokens and cost)."""
    first_token: str = ""
    """An app target's turn: the time to the first byte of its reply, when measured."""


@dataclass(frozen=True)
class AppSuiteView:
    """An app-target suite's own model calls, apart from turncheck's (the judge's)."""

    name: str
    path: str
    calls: str
    """`8 → 5 (1.6 → 1 per turn)`, or one run's `8 in 5 turns (1.6 per turn)`."""
    app_tokens: str
    app_cost: str
    own_tokens: str
    own_cost: str


@dataclass(frozen=True)
class DiffLineView:
    kind: str
    """`add`, `del`, `hunk` or `ctx`: a CSS class, never a value from the report."""
    text: str


@dataclass(frozen=True)
class ChangeView:
    """Something the two sides sent differently: a prompt, the system prompt, the tools."""

    title: str
    summary: str
    base: str
    head: str
    lines: list[DiffLineView]
    """The diff; empty when both texts are short enough to read side by side."""
    note: str = ""
    folded: bool = False
    """Both texts in full behind a click (they are long, or the diff says it)."""


@dataclass(frozen=True)
class TurnPair:
    number: int
    base: TurnView | None
    head: TurnView | None
    base_gap: str = ""
    """Why the base has no such turn, when it has none."""
    head_gap: str = ""
    prompt_changed: bool = False
    prompt_diff: ChangeView | None = None
    """Set for a long changed prompt."""


@dataclass(frozen=True)
class SampleView:
    label: str
    status: str
    turns: list[TurnView]


@dataclass
class RowView:
    """One eval, protocol case or calibration sample, both sides."""

    key: str
    suite: str
    """The suite's file path."""
    name: str
    verdict: str
    status: str
    """Head status (base status for a removed row)."""
    transition: str
    facts: list[str] = field(default_factory=list)
    """Short figures for the row's line: pass rate, p-value, tokens, cost."""
    pairs: list[TurnPair] = field(default_factory=list)
    base_samples: list[SampleView] = field(default_factory=list)
    head_samples: list[SampleView] = field(default_factory=list)
    error: str | None = None
    why: str = ""
    """Why the row has its verdict (the comparison's reason), when known."""
    has_base: bool = False
    has_head: bool = False
    changes: list[ChangeView] = field(default_factory=list)
    """The system prompt and tools, where base and head differ."""
    suite_name: str = ""
    """The suite's declared name (`metadata.name`), shown and searched beside its path."""
    rank: int = len(ORDER)
    """Where the row's severity group stands in `severity.ORDER` (most severe first)."""
    endings: list[EndingView] = field(default_factory=list)
    """A simulated user's eval: how each side's conversation ended."""


@dataclass
class SectionView:
    kind: str
    title: str
    rows: list[RowView]
    note: str | None = None

    def options(self, attribute: str) -> list[tuple[str, int]]:
        """Each value of `attribute` (verdict, suite, status) with its number of rows."""
        counts = Counter(getattr(row, attribute) for row in self.rows)
        return sorted(counts.items())


@dataclass(frozen=True)
class BannerView:
    """The verdict the comment leads with (`render/headline.py`), atop the page."""

    icon: str
    text: str
    counts: str
    tone: str
    """`fail`, `warn` or `ok`: a CSS class, never a value from the report."""


@dataclass(frozen=True)
class AppChangeLine:
    line: str
    prompt: ChangeView | None = None


@dataclass(frozen=True)
class AppChangesView:
    """What an app suite's app sent or did differently at head."""

    name: str
    path: str
    changes: list[AppChangeLine]


def app_changes_views(comparison: Comparison | None) -> list[AppChangesView]:
    if comparison is None:
        return []
    budget = DiffBudget()
    return [AppChangesView(suite.name, suite.path, [
        AppChangeLine(view.line, None if view.prompt is None else change_view(view.prompt))
        for view in change_views(suite, SUMMARY_DIFF_LINES, budget)])
        for suite in changed_app_suites(comparison)]


@dataclass
class ReportView:
    title: str
    facts: list[str]
    sections: list[SectionView]
    diagnostics: list[str]
    """Validation errors: what could not run."""
    two_sided: bool
    """Base and head columns (else the one run's conversations alone)."""
    warnings: list[str] = field(default_factory=list)
    """Validation warnings: everything ran; shown apart, muted."""
    banner: BannerView | None = None
    replayed: frozenset[str] = frozenset()
    """The sides (`base`, `head`, `run`) answered from cassettes: their latencies are the
    recording's, not this run's, and are not shown."""
    app_suites: list[AppSuiteView] = field(default_factory=list)
    app_note: str = APP_CALLS_NOTE
    app_changes: list[AppChangesView] = field(default_factory=list)
    latency: list[LatencyRow] = field(default_factory=list)
    ran_because: list[tuple[str, str]] = field(default_factory=list)
    """(suite path, why) of each suite run only because a file it watches changed."""


# -- building ---------------------------------------------------------------------------


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n… ({len(text) - MAX_TEXT_CHARS:,} more characters)"


def _tokens(usage: Usage, judge: Usage | None = None) -> str:
    text = f"{usage.input_tokens:,} in · {usage.output_tokens:,} out"
    if judge is not None and judge.total:
        text += f" · judge {judge.total:,}"
    return text


def _cost(cost: float | None, judge: float | None = None) -> str:
    if cost is None:
        return "unpriced"
    return usd(cost + (judge or 0.0))


def _check(check: CheckResult) -> CheckView:
    # A detail that already names its type (`match "*x*"`, `min_tokens 5`) is not prefixed.
    named = check.detail.startswith(check.type)
    text = (check.detail if named else f"{check.type}: {check.detail}") \
        + (f" — {check.error}" if check.error else "")
    return CheckView(passed=None if check.error else check.passed, text=text, depth=check.depth)


def turn_view(turn: TurnResult) -> TurnView:
    checks = [_check(c) for c in turn.checks]
    if isinstance(turn, ProtocolTurn):
        checks += [CheckView(passed=None,
                             text=f"{s.id} ({s.type}): "
                             + ("error" if s.score is None else f"{s.score:.2f}")
                             + f" × {s.weight:g} — {s.error or s.detail}")
                   for s in turn.scorers]
    return TurnView(
        number=turn.turn, prompt=_cut(turn.prompt), response=_cut(turn.response),
        checks=checks, passed=turn.passed if not isinstance(turn, ProtocolTurn) else None,
        tokens=_tokens(turn.usage, turn.judge_usage),
        cost=_cost(turn.cost_usd, turn.judge_cost_usd), latency=f"{turn.latency_ms:,.0f} ms",
        app_calls="" if turn.app_model_calls is None else
        counted(turn.app_model_calls, "app model call"),
        first_token="" if turn.first_token_ms is None else
        f"first token {turn.first_token_ms:,.0f} ms",
    )


def _gap(turns: Sequence[TurnResult]) -> str:
    if not turns:
        return "no conversation on this side"
    return f"not sent: the conversation ended after turn {len(turns)}"


_DIFF_KIND = {"+": "add", "-": "del", "@": "hunk"}


def change_view(change: Change) -> ChangeView:
    lines = [] if change.diff is None else \
        [DiffLineView(_DIFF_KIND.get(line[:1], "ctx"), line) for line in change.diff.lines]
    return ChangeView(title=f"{change.what[:1].upper()}{change.what[1:]} changed",
                      summary=change.summary, base=_cut(change.base), head=_cut(change.head),
                      lines=lines, note="" if change.diff is None else change.diff.note,
                      folded=bool(lines) or not change.inline)


def _pair(number: int, base: TurnResult | None, head: TurnResult | None,
          base_gap: str, head_gap: str, budget: DiffBudget | None) -> TurnPair:
    changed = prompt_changed(base, head)
    diff = None
    if changed and base is not None and head is not None:
        change = text_change(f"turn {number} prompt", base.prompt, head.prompt,
                             SUMMARY_DIFF_LINES, budget)
        diff = change_view(change) if change.diff is not None else None
    return TurnPair(number=number, base=turn_view(base) if base is not None else None,
                    head=turn_view(head) if head is not None else None, base_gap=base_gap,
                    head_gap=head_gap, prompt_changed=changed, prompt_diff=diff)


def pair_turns(base: Sequence[TurnResult], head: Sequence[TurnResult],
               budget: DiffBudget | None = None) -> list[TurnPair]:
    """Turn by turn: the base's n-th turn beside the head's n-th turn, each with its own
    prompt (a long changed prompt also as a diff, within the rendering's `budget`)."""
    return [_pair(i + 1, base[i] if i < len(base) else None,
                  head[i] if i < len(head) else None, _gap(base), _gap(head), budget)
            for i in range(max(len(base), len(head)))]


def _eval_samples(result: EvalResult | None) -> list[SampleView]:
    if result is None or not result.samples:
        return []
    return [SampleView(label=f"sample {s.index}" + (f" (seed {s.seed})" if s.seed is not None
                                                     else ""),
                       status=_outcome(s.status.value, s.passed_on_turn, s.failed_on_turn),
                       turns=[turn_view(t) for t in s.turns]) for s in result.samples]


def _outcome(status: str, passed_on_turn: int | None, failed_on_turn: int | None = None) -> str:
    if status == "fail" and failed_on_turn:  # scripted turns
        return f"failed on turn {failed_on_turn}"
    return f"passed on turn {passed_on_turn}" if status == "pass" and passed_on_turn else status


def _informative_turns(result: EvalResult | None, failing_first: bool) -> list[TurnResult]:
    """The conversation to show: with repeats, a failing sample's (head) or a passing
    sample's (base) when there is one, so a flaky eval shows what went wrong."""
    if result is None:
        return []
    if not result.samples:
        return list(result.turns)
    wanted = [s for s in result.samples if (s.status.value != "pass") == failing_first]
    return list((wanted or result.samples)[0].turns)


def _eval_facts(base: EvalResult | None, head: EvalResult | None) -> list[str]:
    facts = []
    for side, result in (("base", base), ("head", head)):
        if result is None:
            continue
        if result.repeats is not None:
            r = result.repeats
            pass_k = pass_k_text(r.pass_hat_k, r.pass_at_k)
            facts.append(f"{side} {r.passes}/{r.samples} samples pass "
                         f"({r.pass_rate_low:.0%}–{r.pass_rate_high:.0%})"
                         + (f", {pass_k}" if pass_k else ""))
        else:
            outcome = _outcome(result.status.value, result.passed_on_turn,
                               result.failed_on_turn)
            facts.append(f"{side} {outcome}")
    app_calls = eval_app_calls(*(_calls_of(result) for result in (base, head)))
    if app_calls is not None:
        facts.append(app_calls)
    if head is not None:
        facts.append(f"{head.usage.total + head.judge_usage.total:,} tokens")
        facts.append(_cost(head.cost_usd, head.judge_cost_usd))
    facts += _simulated_facts(head)
    return facts


def _simulated_facts(head: EvalResult | None) -> list[str]:
    """A simulated user's eval: how the conversation ended, and the simulator's spend
    (apart from the model's or app's)."""
    if head is None or head.simulator is None:
        return []
    facts = []
    if head.conversation is not None:
        facts.append(_ending_text(head.conversation))
    facts.append(f"simulated user ({head.simulator.model}): "
                 f"{head.simulator_usage.total:,} tokens, {_cost(head.simulator_cost_usd)}")
    return facts


def _calls_of(result: EvalResult | None) -> int | None:
    counted_calls = result.app_calls() if result is not None else None
    return None if counted_calls is None else counted_calls[0]


def eval_row(suite: str, name: str, base: EvalResult | None, head: EvalResult | None,
             sent: tuple[Sent | None, Sent | None] = (None, None),
             budget: DiffBudget | None = None) -> RowView:
    """`sent`: what base and head sent besides the turns' prompts, when both are known;
    `budget`: the diff work the rendering has left."""
    main = head if head is not None else base
    status = main.status.value if main is not None else "unknown"
    row = RowView(
        key=f"eval:{suite}:{name}", suite=suite, name=name, verdict=status,
        status=status, transition="", facts=_eval_facts(base, head),
        pairs=pair_turns(_informative_turns(base, failing_first=False),
                         _informative_turns(head, failing_first=True), budget),
        base_samples=_eval_samples(base), head_samples=_eval_samples(head),
        error=head.error if head is not None else None,
        has_base=base is not None, has_head=head is not None,
        changes=[change_view(c) for c in setup_changes(*sent, SUMMARY_DIFF_LINES, budget)],
        endings=_endings(base, head),
    )
    return row


def _endings(base: EvalResult | None, head: EvalResult | None) -> list[EndingView]:
    sides = (("base", base), ("head", head)) if base is not None and head is not None \
        else (("run", head or base),)
    views = []
    for side, result in sides:
        end = result.conversation if result is not None else None
        if end is None:
            continue
        checks = [_check(c) for c in end.success]
        if end.review is not None:
            checks.append(_check(end.review))
        views.append(EndingView(side, _ending_text(end), checks))
    return views


def _ending_text(end: ConversationEnd) -> str:
    return f"ended: {ending_text(end.ending)} after {counted(end.turns, 'turn')}" \
        + (f" ({end.detail})" if end.detail else "")


def eval_rows(comparison: Comparison | None, base: Report | None,
              head: Report | None) -> list[RowView]:
    base_evals, head_evals = results_by_key(base), results_by_key(head)
    base_sent, head_sent = sent_by_key(base), sent_by_key(head)
    budget = DiffBudget()
    if comparison is None:
        side = head if head is not None else base
        suites: list[SuiteResult] = side.suites if side is not None else []
        return by_severity([named(eval_row(
            s.path, e.name, base_evals.get((s.path, e.name)) if head else e, e if head else None,
            sent=(base_sent.get((s.path, e.name)), head_sent.get((s.path, e.name))),
            budget=budget), s.name) for s in suites for e in s.evals])
    rows = []
    for suite in comparison.suites:
        base_path = suite.previous_path or suite.path
        for item in suite.evals:
            base_key = (base_path, item.previous_name or item.name)
            head_key = (suite.path, item.name)
            row = eval_row(
                suite.path, item.name, base_evals.get(base_key), head_evals.get(head_key),
                sent=(base_sent.get(base_key), head_sent.get(head_key)), budget=budget)
            rows.append(named(judged(row, item), suite.name))
    return by_severity(rows)


def judged(row: RowView, item: ComparedRow) -> RowView:
    """A row with what the comparison says of it, whatever its kind: verdict and
    transition, where a broken row broke, the adjusted p-value, why, its severity."""
    row.verdict = item.verdict.value
    row.transition = _unless_same(item.label, item.verdict)
    drop = broke_on(item) if item.transition is Transition.BROKEN else None
    row.facts += [drop] if drop else []
    if item.p_value is not None:
        row.facts.append(f"adjusted p = {item.p_value:.3g}")
    row.why = _reason(row.verdict, item.verdict_reason)
    row.has_base, row.has_head = item.base is not None, item.head is not None
    row.rank = ORDER.index(eval_group(item))
    return row


def named(row: RowView, suite_name: str) -> RowView:
    row.suite_name = suite_name
    return row


_GROUPS = {group.value: group for group in Group}
_STATUS_GROUP = {"error": Group.ERROR, "fail": Group.STILL_FAILING, "skipped": Group.NOT_RUN,
                 "disagree": Group.STILL_FAILING}
"""A row without a comparison: the severity of its head status (or calibration verdict)."""


def _status_rank(verdict: str, status: str) -> int:
    if status == "error":
        return ORDER.index(Group.ERROR)
    if verdict in _GROUPS:
        return ORDER.index(_GROUPS[verdict])
    return ORDER.index(_STATUS_GROUP.get(status, Group.UNCHANGED))


def by_severity(rows: list[RowView]) -> list[RowView]:
    """Most severe first, in `severity.ORDER` as the comment's groups; document order within."""
    for row in rows:
        if row.rank == len(ORDER):
            row.rank = _status_rank(row.verdict, row.status)
    return sorted(rows, key=lambda row: row.rank)


def _unless_same(label: str, verdict: str) -> str:
    """The row's transition beside its verdict badge, unless it says the same word."""
    return "" if label.strip().lower() == verdict.lower() else label


def _reason(verdict: str, reason: str) -> str:
    """The comparison's reason for `verdict`, unless it only repeats the verdict."""
    said = reason.strip()
    if said.lower().removeprefix(verdict.lower()).strip(" :·-") == "":
        return ""
    # `one sample per side: broken` beside the `broken` badge says it once.
    return said.removesuffix(f": {verdict}")


# -- protocol cases ---------------------------------------------------------------------


def _protocol_suite(report: Report | None, path: str) -> ProtocolSuiteResult | None:
    return next((s for s in report.protocols if s.path == path), None) if report else None


def _cases_by_key(report: Report | None) -> dict[tuple[str, str], CaseResult]:
    if report is None:
        return {}
    return {(s.path, c.id): c for s in report.protocols for c in s.cases}


def _case_facts(base: CaseResult | None, head: CaseResult | None,
                score_name: str = "score") -> list[str]:
    facts = []
    for side, case in (("base", base), ("head", head)):
        if case is not None:
            score = case.aggregates.interactive_reasoning
            facts.append(f"{side} {case.status.value}"
                         + ("" if score is None else f", {score_name} {score:.2f}"))
    if head is not None:
        facts.append(f"{head.usage.total + head.judge_usage.total:,} tokens")
        facts.append(_cost(head.cost_usd, head.judge_cost_usd))
    return facts


def _case_samples(case: CaseResult | None) -> list[SampleView]:
    if case is None:
        return []
    return [SampleView(label=f"sample {s.index}",
                       status=s.status.value + ("" if s.score is None else f", {s.score:.2f}"),
                       turns=[turn_view(t) for t in s.turns]) for s in case.samples]


@dataclass(frozen=True)
class _SuiteSides:
    """What a protocol suite's rows share: its labels and the PR's setup changes."""

    score_name: str = "score"
    changes: tuple[ChangeView, ...] = ()


def _suite_sides(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None,
                 budget: DiffBudget) -> _SuiteSides:
    shown = head or base
    label = shown.labels().get("interactive_reasoning") if shown is not None else None
    name = label[:1].lower() + label[1:] if label and label[1:2].islower() else label
    changes: tuple[ChangeView, ...] = ()
    if base is not None and head is not None:
        sides = (Sent(base.system_prompt or "", base.tools),
                 Sent(head.system_prompt or "", head.tools))
        changes = tuple(change_view(c) for c in setup_changes(*sides, SUMMARY_DIFF_LINES,
                                                                budget))
    return _SuiteSides(name or "score", changes)


def case_row(suite: str, case_id: str, base: CaseResult | None, head: CaseResult | None,
             sides: _SuiteSides = _SuiteSides()) -> RowView:
    """`sides`: the suite's labels and setup changes."""
    main = head if head is not None else base
    status = main.status.value if main is not None else "unknown"
    return RowView(
        key=f"case:{suite}:{case_id}", suite=suite, name=case_id, verdict=status,
        status=status, transition="", facts=_case_facts(base, head, sides.score_name),
        changes=list(sides.changes),
        pairs=pair_turns(base.turns if base else [], head.turns if head else []),
        base_samples=_case_samples(base), head_samples=_case_samples(head),
        error=head.error if head is not None else None,
        has_base=base is not None, has_head=head is not None)


def case_rows(comparison: Comparison | None, base: Report | None,
              head: Report | None) -> list[RowView]:
    base_cases, head_cases = _cases_by_key(base), _cases_by_key(head)
    if comparison is None or comparison.protocols is None:
        side = head if head is not None else base
        suites: list[ProtocolSuiteResult] = side.protocols if side is not None else []
        return by_severity([named(case_row(s.path, c.id, None if head else c,
                                           c if head else None), s.name)
                            for s in suites for c in s.cases])
    rows = []
    budget = DiffBudget()
    for suite in comparison.protocols.suites:
        base_path = suite.previous_path or suite.path
        sides = _suite_sides(_protocol_suite(base, base_path), _protocol_suite(head, suite.path),
                             budget)
        for item in suite.cases:
            row = case_row(suite.path, item.id, base_cases.get((base_path, item.id)),
                           head_cases.get((suite.path, item.id)), sides=sides)
            rows.append(named(judged(row, item), suite.name))
    return by_severity(rows)


# -- calibration samples ----------------------------------------------------------------


def _grade_turn(grade: SampleGrade) -> TurnView:
    score = "error" if grade.score is None else str(grade.score)
    return TurnView(
        number=1, prompt=f"label {grade.label}" + (f": {grade.label_reason}"
                                                    if grade.label_reason else ""),
        response=_cut(grade.reason or grade.error or ""),
        checks=[CheckView(passed=grade.badge.value == "agree",
                          text=f"grader score {score}, label {grade.label} ({grade.badge.value})")],
        passed=grade.badge.value == "agree",
        tokens=_tokens(Usage(input_tokens=grade.input_tokens, output_tokens=grade.output_tokens)),
        cost=_cost(grade.cost_usd), latency=f"{grade.latency_ms:,.0f} ms")


def _grade_verdict(base: SampleGrade | None, head: SampleGrade | None) -> str:
    if base is None:
        return "new"
    if head is None:
        return "removed"
    if base.verdict is head.verdict:
        return "unchanged"
    if base.verdict.value == "agree":
        return "regression"
    return "improvement" if head.verdict.value == "agree" else "changed"


def _files(report: Report | None) -> dict[str, CalibrationFileResult]:
    return {} if report is None else {f.path: f for f in report.calibrations}


def calibration_rows(comparison: Comparison | None, base: Report | None,
                     head: Report | None) -> list[RowView]:
    base_files, head_files = _files(base), _files(head)
    previous = {c.path: c.previous_path for c in comparison.calibration} if comparison else {}
    rows = []
    for path in list(head_files) + [p for p in base_files if p not in head_files
                                    and p not in previous.values()]:
        base_file = base_files.get(previous.get(path) or path)
        head_file = head_files.get(path)
        base_grades = {g.id: g for g in base_file.samples} if base_file else {}
        head_grades = {g.id: g for g in head_file.samples} if head_file else {}
        for sample_id in list(head_grades) + [i for i in base_grades if i not in head_grades]:
            b, h = base_grades.get(sample_id), head_grades.get(sample_id)
            main = h or b
            assert main is not None
            verdict = _grade_verdict(b, h) if base is not None else main.verdict.value
            rows.append(RowView(
                key=f"sample:{path}:{sample_id}", suite=path, name=sample_id, verdict=verdict,
                status=main.verdict.value, transition="",
                facts=[f"{side} score {'error' if g.score is None else g.score}"
                       for side, g in (("base", b), ("head", h)) if g is not None]
                + [f"label {main.label}"],
                pairs=[TurnPair(1, _grade_turn(b) if b else None, _grade_turn(h) if h else None)],
                error=h.error if h else None, has_base=b is not None, has_head=h is not None))
    return by_severity(rows)


# -- app targets' own model calls --------------------------------------------------------


def _two(base: str | None, head: str | None) -> str:
    if base is None or head is None or base == head:
        return head if head is not None else base or "–"
    return f"{base} → {head}"


def _spend_view(name: str, path: str, calls: str, base: Spend | None,
                head: Spend | None) -> AppSuiteView:
    def each(read: str) -> str:
        texts = [None if s is None else
                 f"{getattr(s, read):,}" if read.endswith("tokens") else _cost(getattr(s, read))
                 for s in (base, head)]
        return _two(*texts)

    return AppSuiteView(name=name, path=path, calls=calls, app_tokens=each("tokens"),
                        app_cost=each("cost_usd"), own_tokens=each("judge_tokens"),
                        own_cost=each("judge_cost_usd"))


def app_suites(comparison: Comparison | None, base: Report | None,
               head: Report | None) -> list[AppSuiteView]:
    """Each app-target suite's model calls, tokens and cost, and turncheck's own (the
    judge's) apart: the comparison's `app_calls` and totals when there is one, else the
    one run's."""
    if comparison is not None:
        return [_spend_view(s.name, s.path, calls_change(s.app_calls), s.totals.base,
                            s.totals.head)
                for s in comparison.suites if s.app_calls is not None]
    side = head if head is not None else base
    suites = side.suites if side is not None else []
    return [_spend_view(s.name, s.path, calls_in_turns(*found), None, s.spend)
            for s in suites if (found := s.app_calls())]


# -- the page ---------------------------------------------------------------------------


def _facts(comparison: Comparison | None, base: Report | None, head: Report | None
           ) -> list[str]:
    facts = []
    side = head or base
    if side is not None:
        facts.append(f"{side.mode} mode")
        facts.append(f"turncheck {side.turncheck_version}")
    commits = [f"{name} {report.commit[:12]}" for name, report in (("base", base), ("head", head))
               if report is not None and report.commit]
    facts.extend(commits)
    if comparison is not None:
        totals = comparison.totals
        facts.append(f"cost {_cost(totals.base.total_cost_usd) if totals.base else '–'}"
                     f" → {_cost(totals.head.total_cost_usd if totals.head else None)}")
    elif head is not None:
        facts.append(f"cost {_cost(head.totals.cost_usd, head.totals.judge_cost_usd)}")
    return facts


def _diagnostics(comparison: Comparison | None, head: Report | None,
                 errors: bool) -> list[str]:
    """The validation errors (`errors`), else the warnings, one line each."""
    found = comparison.diagnostics if comparison is not None else \
        head.diagnostics if head is not None else []
    return [d.compiler_style() for d in found if d.is_error == errors]


_TONE = {"❌": "fail", "⚠️": "warn"}


def banner(comparison: Comparison | None, head: Report | None,
           reasons: Sequence[str] | None) -> BannerView | None:
    """The comment's heading and counts. `reasons`: why the check fails (None: under the
    default `fail-on`). A run alone is read as a comparison with no base, without calling
    every row new: what it has to say is what errored and how many pass."""
    if comparison is None:
        return None if head is None else _run_banner(head, reasons)
    if reasons is None:
        reasons = fail_reasons(comparison, DEFAULT_FAIL_ON)
    return _banner(headline(comparison, findings(comparison), reasons))


def _run_banner(head: Report, reasons: Sequence[str] | None) -> BannerView:
    # With nothing to compare with, a failing eval is the news (not "new"), so the
    # default gate is read with `failure` added.
    comparison = compare_reports(None, head)
    found = [f for f in findings(comparison) if f.group is not Group.NEW]
    if reasons is None:
        reasons = fail_reasons(comparison, (*DEFAULT_FAIL_ON, FailOn.FAILURE))
    top = headline(comparison, found, reasons)
    return _banner(replace(top, counts=top.counts.replace("no changes · ", "")))


def _banner(top: Headline) -> BannerView:
    # The counts' only markup is the comment's bold on the worst count.
    return BannerView(icon=top.icon, text=top.text, counts=top.counts.replace("**", ""),
                      tone=_TONE.get(top.icon, "ok"))


def _replayed(base: Report | None, head: Report | None) -> frozenset[str]:
    sides = {name for name, report in (("base", base), ("head", head))
             if report is not None and report.mode == "replay"}
    one = head if head is not None else base
    if one is not None and one.mode == "replay":
        sides.add("run")
    return frozenset(sides)


def build_view(*, head: Report | None, base: Report | None = None,
               comparison: Comparison | None = None,
               reasons: Sequence[str] | None = None,
               why_ran: Mapping[str, Sequence[str]] | None = None) -> ReportView:
    """`reasons`: why the check fails, for the verdict banner (None: the default gate);
    `why_ran`: suite path → why it ran although its own file did not change."""
    no_runs = head is None and base is None
    note = ("This comparison file has no conversations: pass the run reports "
            "(`turncheck report HEAD.json --base BASE.json`) to see them.") if no_runs else None
    sections = [
        SectionView("evals", "Evals", eval_rows(comparison, base, head), note),
        SectionView("cases", "Protocol cases", case_rows(comparison, base, head)),
        SectionView("samples", "Calibration samples", calibration_rows(comparison, base, head)),
    ]
    title = "turncheck report" + (": base → head" if (base and head) or comparison else "")
    return ReportView(title=title, facts=_facts(comparison, base, head),
                      sections=[s for s in sections if s.rows or s.note],
                      diagnostics=_diagnostics(comparison, head, errors=True),
                      warnings=_diagnostics(comparison, head, errors=False),
                      two_sided=base is not None or bool(comparison and comparison.has_base),
                      banner=banner(comparison, head, reasons), replayed=_replayed(base, head),
                      app_suites=app_suites(comparison, base, head),
                      app_changes=app_changes_views(comparison),
                      latency=latency_rows(comparison) if comparison is not None else [],
                      ran_because=[(path, "; ".join(why))
                                   for path, why in sorted((why_ran or {}).items())])


def _asset(name: str) -> str:
    return (files("turncheck.render") / "templates" / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_html(view: ReportView) -> str:
    style, script = _asset("report.css"), _asset("report.js")
    policy = (f"default-src 'none'; style-src {_csp_hash(style)}; "
              f"script-src {_csp_hash(script)}; img-src data:; base-uri 'none'; "
              "form-action 'none'")
    # Our own constant assets, not report content: the only values marked safe.
    return render_template(_ENVIRONMENT, "report.html.j2", view=view, style=Markup(style),
                           script=Markup(script), policy=policy)


def render_report(*, head: Report | None, base: Report | None = None,
                  comparison: Comparison | None = None,
                  reasons: Sequence[str] | None = None,
                  why_ran: Mapping[str, Sequence[str]] | None = None) -> str:
    """`reasons`: why the check fails (`compare.policy.fail_reasons`), for the verdict
    banner; None reads the comparison under the default `fail-on`. `why_ran`: suite path
    → why it ran (a file it watches changed)."""
    return render_html(build_view(head=head, base=base, comparison=comparison,
                                  reasons=reasons, why_ran=why_ran))


_ENVIRONMENT = html_environment()
