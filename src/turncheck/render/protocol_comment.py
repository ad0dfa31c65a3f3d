"""The protocol-suite section of the PR comment: aggregates, per-case turn tables, transcripts.

Included by `comment.md.j2` (template `protocol.md.j2`). Sizes are capped here; the
comment's detail level drops transcripts first, then the per-case tables (keeping
each suite's aggregate table), like the eval sections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turncheck.render.columns import Column, markdown_table
from turncheck.render.table_model import (
    PROTOCOL_SUITE,
    STATUS_ICON,
    Capped,
    Money,
    samples_text,
    suite_heading,
)
from turncheck.report.protocol import CaseResult, ScorerResult
from turncheck.report.protocol_comparison import (
    CaseComparison,
    ProtocolComparison,
    ProtocolSuiteComparison,
    ScoreChange,
)
from turncheck.report.rows import Transition
from turncheck.report.run import Report, Status
from turncheck.text.money import score_change
from turncheck.text.money import score_text as score
from turncheck.text.money import usd as format_usd

MAX_SUITES = 20
MAX_CASES = 50
MAX_CASES_COMPACT = 15
MAX_TRANSCRIPTS = 10
AGGREGATE_LABELS = {
    "interactive_reasoning": "Interactive reasoning (weighted)",
    "final_f1": "Final hierarchy F1",
    "self_correction": "Self-correction",
    "meta_cognition": "Meta-cognition (r)",
}


def _change_row(label: str, item: ScoreChange, has_base: bool) -> dict[str, str]:
    return {"label": label, "base": score(item.base) if has_base else "—",
            "head": score(item.head),
            "delta": score_change(item.base, item.head) if has_base else "—"}


def _aggregates(suite: ProtocolSuiteComparison, has_base: bool) -> list[dict[str, str]]:
    rows = [_change_row(label, suite.aggregates[name], has_base)
            for name, label in AGGREGATE_LABELS.items() if name in suite.aggregates]
    money = Money(suite.base, suite.head, has_base)
    return [*rows, money.tokens().cells(), money.total("Cost (model + judge)").cells()]


def _case_label(case: CaseComparison) -> str:
    if case.transition is Transition.UNCHANGED:
        label = case.head_status.value if case.head_status else "removed"
    else:
        label = case.transition.value
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


def _case_view(case: CaseComparison, has_base: bool) -> dict[str, Any]:
    status = case.head_status or case.base_status
    irs = case.aggregates.get("interactive_reasoning", ScoreChange())
    return {
        "id": case.id,
        "icon": "🗑️" if case.head_status is None else STATUS_ICON[status or Status.ERROR],
        "label": _case_label(case),
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


def _scorer_view(result: ScorerResult) -> dict[str, str]:
    icon = "💥" if result.error else "•"
    text = f"{result.id} ({result.type}, weight {result.weight:g}): {score(result.score)} — "
    text += result.detail + (f" — {result.error}" if result.error else "")
    return {"icon": icon, "text": text}


def _transcript(case: CaseResult) -> dict[str, Any]:
    return {
        "id": case.id, "icon": STATUS_ICON[case.status],
        "turns": [
            {"number": t.turn, "id": t.id, "variant": t.variant, "score": score(t.score),
             "prompt": t.prompt, "response": t.response,
             "scorers": [_scorer_view(r) for r in t.scorers]}
            for t in case.turns
        ],
        "error": case.error,
    }


def _interesting(case: CaseComparison) -> bool:
    moved = any(t.delta for t in case.turns)
    return case.transition is not Transition.UNCHANGED or moved or case.head_status \
        is not Status.PASS


def _suite_view(suite: ProtocolSuiteComparison, head: Report, has_base: bool,
                detail: int) -> dict[str, Any]:
    heading = suite_heading(PROTOCOL_SUITE, suite.state)
    cases = suite.cases
    if detail < 3:
        cases = [c for c in cases if _interesting(c)] or cases
    shown = Capped.of(cases, MAX_CASES if detail >= 3 else MAX_CASES_COMPACT).shown
    results = next((p for p in head.protocols if p.path == suite.path), None)
    by_id = {c.id: c for c in results.cases} if results else {}
    transcripts = [_transcript(by_id[c.id]) for c in shown[:MAX_TRANSCRIPTS] if c.id in by_id]
    counts = suite.counts
    return {
        "name": suite.name, "path": suite.path, "previous_path": suite.previous_path,
        "state_icon": heading.icon, "state_label": heading.label, "model": suite.model,
        "summary": f"{counts.passed} of {counts.cases} cases pass"
        + (f" (threshold {suite.pass_threshold:g})" if suite.pass_threshold is not None else ""),
        "meta_note": suite.meta_cognition_note,
        "aggregates": _aggregates(suite, has_base),
        "cases": [_case_view(c, has_base) for c in shown],
        "hidden_cases": len(suite.cases) - len(shown),
        "transcripts": transcripts if detail >= 3 else [],
    }


def protocol_view(protocols: ProtocolComparison | None, head: Report, has_base: bool,
                  detail: int) -> dict[str, Any]:
    """What `protocol.md.j2` renders; empty `suites` when there are no protocol suites."""
    if protocols is None:
        return {"suites": [], "hidden_suites": 0, "detail": detail}
    suites = Capped.of(protocols.suites, MAX_SUITES)
    return {
        "suites": [_suite_view(s, head, has_base, detail) for s in suites.shown],
        "hidden_suites": suites.hidden,
        "detail": detail,
    }
