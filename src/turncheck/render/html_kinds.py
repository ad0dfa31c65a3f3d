"""What the HTML report shows of each kind's results, beside what every row shows
(`html_rows`): an eval's conversation, samples and simulated user; a protocol case's
turns, scores and its suite's setup changes; a sample file's graded samples. Each kind
is one `HtmlKind`: its section, its results by (file, name), and its row's parts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from turncheck.render.app_calls import eval_app_calls
from turncheck.render.console import ending_text
from turncheck.render.display import pass_k_text
from turncheck.render.html_turns import (
    change_view,
    check_view,
    cost_text,
    cut,
    pair_turns,
    tokens_text,
    turn_view,
)
from turncheck.render.html_views import (
    ChangeView,
    CheckView,
    EndingView,
    SampleView,
    TurnPair,
    TurnView,
)
from turncheck.render.prompt_changes import (
    SUMMARY_DIFF_LINES,
    DiffBudget,
    Sent,
    sent_by_key,
    setup_changes,
)
from turncheck.report.calibration import CalibrationFileResult, SampleGrade, percent_text
from turncheck.report.protocol import CaseResult, ProtocolSuiteResult
from turncheck.report.results import ConversationEnd, TurnResult
from turncheck.report.rows import RowKind
from turncheck.report.run import EvalResult, Report
from turncheck.report.spend import Usage
from turncheck.text.counts import counted

R = TypeVar("R")
Key = tuple[str, str]
"""(file, name) of a row."""


@dataclass(frozen=True)
class RowParts:
    """What a row shows of its kind's results, both sides."""

    facts: list[str] = field(default_factory=list)
    pairs: list[TurnPair] = field(default_factory=list)
    base_samples: list[SampleView] = field(default_factory=list)
    head_samples: list[SampleView] = field(default_factory=list)
    changes: list[ChangeView] = field(default_factory=list)
    endings: list[EndingView] = field(default_factory=list)
    error: str | None = None


PartsOf = Callable[[Key, Key, R | None, R | None], RowParts]
"""A row's parts from its base key, head key, base result and head result."""


@dataclass(frozen=True)
class HtmlKind(Generic[R]):
    kind: RowKind
    section: str
    """The section's id: a CSS and script hook, never a value from the report."""
    title: str
    results: Callable[[Report], dict[Key, R]]
    parts: Callable[[Report | None, Report | None, DiffBudget], PartsOf[R]]
    """The kind's parts of a row, prepared once per page for its two reports."""


# -- evals ------------------------------------------------------------------------------


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


def eval_facts(base: EvalResult | None, head: EvalResult | None) -> list[str]:
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
    return facts + _head_spend(head) + _simulated_facts(head)


def _head_spend(head: EvalResult | CaseResult | None) -> list[str]:
    if head is None:
        return []
    return [f"{head.usage.total + head.judge_usage.total:,} tokens",
            cost_text(head.cost_usd, head.judge_cost_usd)]


def _simulated_facts(head: EvalResult | None) -> list[str]:
    """A simulated user's eval: how the conversation ended, and the simulator's spend
    (apart from the model's or app's)."""
    if head is None or head.simulator is None:
        return []
    facts = []
    if head.conversation is not None:
        facts.append(_ending_text(head.conversation))
    facts.append(f"simulated user ({head.simulator.model}): "
                 f"{head.simulator_usage.total:,} tokens, {cost_text(head.simulator_cost_usd)}")
    return facts


def _calls_of(result: EvalResult | None) -> int | None:
    counted_calls = result.app_calls() if result is not None else None
    return None if counted_calls is None else counted_calls[0]


def eval_parts(base: EvalResult | None, head: EvalResult | None,
               sent: tuple[Sent | None, Sent | None] = (None, None),
               budget: DiffBudget | None = None) -> RowParts:
    """`sent`: what base and head sent besides the turns' prompts, when both are known;
    `budget`: the diff work the rendering has left."""
    return RowParts(
        facts=eval_facts(base, head),
        pairs=pair_turns(_informative_turns(base, failing_first=False),
                         _informative_turns(head, failing_first=True), budget),
        base_samples=_eval_samples(base), head_samples=_eval_samples(head),
        error=head.error if head is not None else None,
        changes=[change_view(c) for c in setup_changes(*sent, SUMMARY_DIFF_LINES, budget)],
        endings=_endings(base, head))


def _endings(base: EvalResult | None, head: EvalResult | None) -> list[EndingView]:
    sides = (("base", base), ("head", head)) if base is not None and head is not None \
        else (("run", head or base),)
    views = []
    for side, result in sides:
        end = result.conversation if result is not None else None
        if end is None:
            continue
        checks = [check_view(c) for c in end.success]
        if end.review is not None:
            checks.append(check_view(end.review))
        views.append(EndingView(side, _ending_text(end), checks))
    return views


def _ending_text(end: ConversationEnd) -> str:
    return f"ended: {ending_text(end.ending)} after {counted(end.turns, 'turn')}" \
        + (f" ({end.detail})" if end.detail else "")


def _evals(report: Report) -> dict[Key, EvalResult]:
    return {(suite.path, e.name): e for suite in report.suites for e in suite.evals}


def _eval_parts(base: Report | None, head: Report | None, budget: DiffBudget
                ) -> PartsOf[EvalResult]:
    base_sent, head_sent = sent_by_key(base), sent_by_key(head)
    return lambda base_key, head_key, b, h: eval_parts(
        b, h, (base_sent.get(base_key), head_sent.get(head_key)), budget)


# -- protocol cases ---------------------------------------------------------------------


def _case_facts(base: CaseResult | None, head: CaseResult | None,
                score_name: str = "score") -> list[str]:
    facts = []
    for side, case in (("base", base), ("head", head)):
        if case is not None:
            score = case.aggregates.interactive_reasoning
            facts.append(f"{side} {case.status.value}"
                         + ("" if score is None else f", {score_name} {score:.2f}"))
    return facts + _head_spend(head)


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


def case_parts(base: CaseResult | None, head: CaseResult | None,
               sides: _SuiteSides = _SuiteSides()) -> RowParts:
    """`sides`: the suite's labels and setup changes."""
    return RowParts(
        facts=_case_facts(base, head, sides.score_name), changes=list(sides.changes),
        pairs=pair_turns(base.turns if base else [], head.turns if head else []),
        base_samples=_case_samples(base), head_samples=_case_samples(head),
        error=head.error if head is not None else None)


def _cases(report: Report) -> dict[Key, CaseResult]:
    return {(s.path, c.id): c for s in report.protocols for c in s.cases}


def _protocol_suite(report: Report | None, path: str) -> ProtocolSuiteResult | None:
    return next((s for s in report.protocols if s.path == path), None) if report else None


def _case_parts(base: Report | None, head: Report | None, budget: DiffBudget
                ) -> PartsOf[CaseResult]:
    suites: dict[tuple[str, str], _SuiteSides] = {}

    def parts(base_key: Key, head_key: Key, b: CaseResult | None, h: CaseResult | None
              ) -> RowParts:
        files = (base_key[0], head_key[0])
        if files not in suites:  # once per suite: its setup changes are every case's
            suites[files] = _suite_sides(_protocol_suite(base, files[0]),
                                         _protocol_suite(head, files[1]), budget)
        return case_parts(b, h, suites[files])

    return parts


# -- sample files -----------------------------------------------------------------------


def _grade_turn(grade: SampleGrade) -> TurnView:
    score = "error" if grade.score is None else str(grade.score)
    agreed = grade.badge.value == "agree"
    return TurnView(
        number=1, prompt=f"label {grade.label}" + (f": {grade.label_reason}"
                                                    if grade.label_reason else ""),
        response=cut(grade.reason or grade.error or ""),
        checks=[CheckView(passed=agreed,
                          text=f"grader score {score}, label {grade.label} ({grade.badge.value})")],
        passed=agreed,
        tokens=tokens_text(Usage(input_tokens=grade.input_tokens,
                                 output_tokens=grade.output_tokens)),
        cost=cost_text(grade.cost_usd), latency=f"{grade.latency_ms:,.0f} ms")


def _grades(result: CalibrationFileResult | None) -> list[SampleView]:
    if result is None:
        return []
    return [SampleView(label=f"sample {grade.id}", status=grade.verdict.value,
                       turns=[_grade_turn(grade)]) for grade in result.samples]


def _file_facts(base: CalibrationFileResult | None, head: CalibrationFileResult | None
                ) -> list[str]:
    facts = [f"{side} {result.agreed} of {counted(len(result.samples), 'sample')} agree"
             + ("" if result.agreement_percent is None
                else f" ({percent_text(result.agreement_percent)})")
             for side, result in (("base", base), ("head", head)) if result is not None]
    if head is not None:
        facts.append(cost_text(head.cost_usd))
    return facts


def file_parts(base: CalibrationFileResult | None, head: CalibrationFileResult | None
               ) -> RowParts:
    """A sample file: each side's graded samples, the label beside the grader's score."""
    return RowParts(facts=_file_facts(base, head), base_samples=_grades(base),
                    head_samples=_grades(head),
                    error=None if head is None else head.note)


def _files(report: Report) -> dict[Key, CalibrationFileResult]:
    return {(f.path, f.path): f for f in report.calibrations if f.graded}


def _file_parts(base: Report | None, head: Report | None, budget: DiffBudget
                ) -> PartsOf[CalibrationFileResult]:
    return lambda base_key, head_key, b, h: file_parts(b, h)


KINDS: tuple[HtmlKind[Any], ...] = (
    HtmlKind(RowKind.EVAL, "evals", "Evals", _evals, _eval_parts),
    HtmlKind(RowKind.CASE, "cases", "Protocol cases", _cases, _case_parts),
    HtmlKind(RowKind.SAMPLE_FILE, "samples", "Sample files", _files, _file_parts),
)
"""Every kind's section, in the page's order."""
