"""The protocol-suite section of the PR comment: aggregates, per-case turn tables, transcripts.

Included by `comment.md.j2` (template `protocol.md.j2`). A suite shows the aggregates and
scorers it declares, under its own labels; the system prompt and tools when the PR
changed them (as for eval suites); cases most severe first (`render/severity.py`), so
the capped tables and transcripts (base then head, turn by turn) are those of the cases
that broke before those still failing. Sizes are capped here; the comment's detail
level drops transcripts first, then the per-case tables (keeping each suite's
aggregate table), like the eval sections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turncheck.render.columns import Column, markdown_table
from turncheck.render.comment_transcript import change_view
from turncheck.render.display import (
    PROTOCOL_SUITE,
    STATUS_ICON,
    Capped,
    Money,
    samples_text,
    suite_heading,
)
from turncheck.render.prompt_changes import (
    COMMENT_DIFF_LINES,
    DiffBudget,
    Sent,
    prompt_changed,
    setup_changes,
)
from turncheck.render.severity import ORDER, broke_on, eval_group
from turncheck.report.protocol import CaseResult, ProtocolSuiteResult, ProtocolTurn, ScorerResult
from turncheck.report.protocol_comparison import (
    CaseComparison,
    ProtocolComparison,
    ProtocolSuiteComparison,
    ScoreChange,
    ScorerChange,
)
from turncheck.report.results import Status
from turncheck.report.rows import Transition
from turncheck.report.run import Report
from turncheck.text.markdown import md_cell
from turncheck.text.money import rating_text, score_change
from turncheck.text.money import score_text as score
from turncheck.text.money import usd as format_usd

MAX_SUITES = 20
MAX_CASES = 50
MAX_CASES_COMPACT = 15
MAX_TRANSCRIPTS = 10
TRANSCRIPT_CHARS = 36_000
"""Characters of prompts and replies all transcripts of one suite show together, so the
transcripts of the most severe cases fit the comment beside everything else."""
MIN_TEXT_CHARS, MAX_TEXT_CHARS = 300, 4000
MAX_LABEL_CHARS = 120
SCORE = "interactive_reasoning"


def _change_row(label: str, item: ScoreChange, has_base: bool) -> dict[str, str]:
    return {"label": md_cell(label, MAX_LABEL_CHARS), "base": score(item.base) if has_base
            else "—", "head": score(item.head),
            "delta": score_change(item.base, item.head) if has_base else "—"}


def _rating(value: float | None, scale: list[int]) -> str:
    return "—" if value is None else rating_text(value, scale, mean=True)


def _scorer_row(scorer: ScorerChange, has_base: bool) -> dict[str, str]:
    """A declared scorer's mean over the cases: a judge scale in its own ratings."""
    label = md_cell(f"{scorer.name} · {scorer.turn}", MAX_LABEL_CHARS)
    if scorer.scale is None:
        return {**_change_row("", scorer, has_base), "label": label}
    base, head = scorer.base_rating, scorer.head_rating
    return {"label": label, "base": _rating(base, scorer.scale) if has_base else "—",
            "head": _rating(head, scorer.scale),
            "delta": score_change(base, head, 1) if has_base else "—"}


def _aggregates(suite: ProtocolSuiteComparison, has_base: bool) -> list[dict[str, str]]:
    rows = [_change_row(suite.labels.get(name, name), change, has_base)
            for name, change in suite.aggregates.items()]
    rows += [_scorer_row(scorer, has_base) for scorer in suite.scorers]
    money = Money(suite.base, suite.head, has_base)
    return [*rows, money.tokens().cells(), money.total("Cost (model + judge)").cells()]


def score_label(labels: dict[str, str]) -> str:
    """The weighted score's label as it reads inside a sentence."""
    label = labels.get(SCORE, "weighted score")
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


def _case_label(case: CaseComparison) -> str:
    if case.transition is Transition.UNCHANGED:
        label = case.head_status.value if case.head_status else "removed"
    else:
        label = case.transition.value
    drop = broke_on(case) if case.transition is Transition.BROKEN else None
    if drop is not None:
        label += f" · {drop}"
    if case.head is not None and case.head.samples > 1:
        label += f" · {samples_text(case.head.passes, case.head.samples, False, 'pass')}"
    return label + (" · 🎲 flaky" if case.flaky else "")


def _variant(turn_variant: str | None, base_variant: str | None, has_base: bool) -> str:
    shown = turn_variant or "—"
    if has_base and base_variant != turn_variant and base_variant is not None:
        shown += f" (base {base_variant})"
    return shown


Cells = dict[str, str]


def _cell(key: str) -> Callable[[Cells], str]:
    return lambda row: row[key]


TURN_COLUMNS: list[Column[Cells]] = [
    Column("Turn", _cell("id"), untrusted=100), Column("Variant", _cell("variant"), untrusted=200),
    *(Column(header, _cell(key), numeric=True) for header, key in (
        ("Score", "score"), ("Base", "base"), ("Δ", "delta"), ("Tokens", "tokens"),
        ("Cost", "cost")))]


def _case_view(case: CaseComparison, has_base: bool, labels: dict[str, str]) -> dict[str, Any]:
    status = case.head_status or case.base_status
    irs = case.aggregates.get(SCORE, ScoreChange())
    return {
        "id": case.id,
        "icon": "🗑️" if case.head_status is None else STATUS_ICON[status or Status.ERROR],
        "label": _case_label(case),
        "score_label": score_label(labels),
        "irs": score(irs.head) + (f" ({score_change(irs.base, irs.head)})" if has_base and
                                  irs.delta is not None else ""),
        "error": case.error,
        "turns": markdown_table(TURN_COLUMNS, [
            {"id": t.id, "variant": _variant(t.head_variant, t.base_variant, has_base),
             "score": score(t.head), "base": score(t.base) if has_base else "—",
             "delta": score_change(t.base, t.head) if has_base else "—",
             "tokens": "—" if t.tokens is None else f"{t.tokens:,}",
             "cost": "—" if t.tokens is None else str(format_usd(t.cost_usd))}
            for t in case.turns
        ]),
    }


def _scorer_view(result: ScorerResult, base: ScorerResult | None,
                 label: str) -> dict[str, str]:
    icon = "💥" if result.error else "•"
    named = label if label == result.id else f"{label} [{result.id}]"
    text = f"{named} ({result.type}, weight {result.weight:g}): {score(result.score)} — "
    text += result.detail + (f" — {result.error}" if result.error else "")
    if base is not None and (base.score, base.detail, base.error) != (
            result.score, result.detail, result.error):
        text += f" · base {score(base.score)} — {base.error or base.detail}"
    return {"icon": icon, "text": text}


def _turn_view(number: int, base: ProtocolTurn | None, head: ProtocolTurn | None,
               suite: ProtocolSuiteResult) -> dict[str, Any]:
    shown = head or base
    assert shown is not None
    before = {r.id: r for r in base.scorers} if base is not None else {}
    scorers = head.scorers if head is not None else []
    return {
        "number": number, "id": shown.id, "variant": shown.variant,
        "base_variant": base.variant if base is not None and head is not None
        and base.variant != head.variant else None,
        "score": score(head.score if head is not None else None),
        "base_score": None if base is None else score(base.score),
        "prompt_changed": prompt_changed(base, head),
        "prompt": shown.prompt, "base_prompt": base.prompt if base is not None else None,
        "response": head.response if head is not None else None,
        "base_response": base.response if base is not None else None,
        "scorers": [_scorer_view(r, before.get(r.id), suite.scorer_label(shown.id, r.id))
                    for r in scorers],
    }


def _transcript(case: CaseComparison, head: CaseResult, base: CaseResult | None,
                suite: ProtocolSuiteResult) -> dict[str, Any]:
    """Turn by turn, the base's prompt and answer then the head's."""
    before = {t.id: t for t in base.turns} if base is not None else {}
    ids = [t.id for t in head.turns] + [i for i in before if i not in
                                        {t.id for t in head.turns}]
    after = {t.id: t for t in head.turns}
    return {
        "id": head.id, "icon": STATUS_ICON[head.status], "change": _case_label(case),
        "has_base": base is not None,
        "turns": [_turn_view(n, before.get(i), after.get(i), suite)
                  for n, i in enumerate(ids, 1)],
        "error": head.error, "base_error": base.error if base is not None else None,
    }


def _interesting(case: CaseComparison) -> bool:
    moved = any(t.delta for t in case.turns)
    return case.transition is not Transition.UNCHANGED or moved or case.head_status \
        is not Status.PASS


def by_severity(cases: list[CaseComparison]) -> list[CaseComparison]:
    """Most severe first (the findings' order: errors, regressions, broken, …, still
    failing, unchanged), case order within a group."""
    return sorted(cases, key=lambda case: ORDER.index(eval_group(case)))


def _suite_of(report: Report | None, path: str) -> ProtocolSuiteResult | None:
    return next((p for p in report.protocols if p.path == path), None) if report else None


def _setup(base: ProtocolSuiteResult | None, head: ProtocolSuiteResult | None,
           budget: DiffBudget) -> list[dict[str, Any]]:
    """The system prompt and tools where the PR changed them, as for eval suites."""
    if base is None or head is None:
        return []
    sides = (Sent(base.system_prompt or "", base.tools), Sent(head.system_prompt or "",
                                                              head.tools))
    return [change_view(c) for c in setup_changes(*sides, COMMENT_DIFF_LINES, budget)]


def _transcripts(cases: list[CaseComparison], head: ProtocolSuiteResult | None,
                 base: ProtocolSuiteResult | None) -> list[dict[str, Any]]:
    if head is None:
        return []
    heads = {c.id: c for c in head.cases}
    bases = {c.id: c for c in base.cases} if base is not None else {}
    shown = [c for c in cases if c.id in heads][:MAX_TRANSCRIPTS]
    return [_transcript(c, heads[c.id], bases.get(c.id), head) for c in shown]


def text_limit(transcripts: list[dict[str, Any]]) -> int:
    """Characters each prompt and reply of these transcripts may show."""
    texts: int = sum(3 + bool(turn["prompt_changed"]) for t in transcripts
                     for turn in t["turns"])
    return max(MIN_TEXT_CHARS, min(MAX_TEXT_CHARS, TRANSCRIPT_CHARS // max(1, texts)))


def _suite_view(suite: ProtocolSuiteComparison, head: Report, base: Report | None,
                has_base: bool, detail: int, budget: DiffBudget) -> dict[str, Any]:
    heading = suite_heading(PROTOCOL_SUITE, suite.state)
    cases = by_severity(suite.cases)
    if detail < 3:
        cases = [c for c in cases if _interesting(c)] or cases
    shown = Capped.of(cases, MAX_CASES if detail >= 3 else MAX_CASES_COMPACT).shown
    results = _suite_of(head, suite.path)
    base_results = _suite_of(base, suite.previous_path or suite.path)
    counts = suite.counts
    transcripts = _transcripts(shown, results, base_results) if detail >= 3 else []
    return {
        "name": suite.name, "path": suite.path, "previous_path": suite.previous_path,
        "state_icon": heading.icon, "state_label": heading.label, "model": suite.model,
        "summary": f"{counts.passed} of {counts.cases} cases pass"
        + (f" (threshold {suite.pass_threshold:g})" if suite.pass_threshold is not None else ""),
        "meta_note": suite.meta_cognition_note if "meta_cognition" in suite.aggregates
        else None,
        "setup": _setup(base_results, results, budget),
        "aggregates": _aggregates(suite, has_base),
        "cases": [_case_view(c, has_base, suite.labels) for c in shown],
        "hidden_cases": len(suite.cases) - len(shown),
        "transcripts": transcripts, "text_limit": text_limit(transcripts),
    }


def protocol_view(protocols: ProtocolComparison | None, head: Report, has_base: bool,
                  detail: int, base: Report | None = None) -> dict[str, Any]:
    """What `protocol.md.j2` renders; empty `suites` when there are no protocol suites."""
    if protocols is None:
        return {"suites": [], "hidden_suites": 0, "detail": detail}
    suites = Capped.of(protocols.suites, MAX_SUITES)
    budget = DiffBudget()
    return {
        "suites": [_suite_view(s, head, base, has_base, detail, budget) for s in suites.shown],
        "hidden_suites": suites.hidden,
        "detail": detail,
    }
