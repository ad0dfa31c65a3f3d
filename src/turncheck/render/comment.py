"""The PR comment and step summary, rendered from a comparison with Jinja.

GitHub rejects comment bodies over 65,536 characters, so the comment is rendered
at decreasing detail until it fits: transcripts go first, then unchanged eval
rows, then the per-suite tables. The header, verdict, totals and the hidden
marker are always kept. The step summary gets the full detail (≤ 1 MiB).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from turncheck.compare.comparison import (
    Comparison,
    EvalComparison,
    EvalSide,
    Spend,
    SuiteComparison,
    SuiteState,
    Transition,
)
from turncheck.diagnostics import Diagnostic
from turncheck.engine.report import EvalResult, Report, Status, TurnResult
from turncheck.render.calibration_comment import calibration_view
from turncheck.render.environment import make_environment, render_template, signed_int, signed_usd
from turncheck.render.environment import usd as format_usd
from turncheck.render.protocol_comment import protocol_view

COMMENT_LIMIT = 65_536
MARKER = "<!-- turncheck:comment -->"
MAX_DIAGNOSTICS = 50
MAX_ROWS_WHEN_COMPACT = 30
CUT_NOTE = (
    "\n_The rest of this report is omitted to fit GitHub's comment size limit; the workflow "
    "run's step summary and the JSON report have everything._\n"
)
FULL, NO_TRANSCRIPTS, SUMMARY_ONLY = 3, 2, 1

STATUS_ICON = {Status.PASS: "✅", Status.FAIL: "❌", Status.ERROR: "💥"}
TRANSITION_ICON = {
    Transition.FIXED: "🟢", Transition.BROKEN: "🔴", Transition.STILL_FAILING: "🟠",
    Transition.TURN_CHANGED: "🔁", Transition.NEW: "🆕", Transition.REMOVED: "🗑️",
    Transition.UNCHANGED: "⚪",
}
SUITE_STATE = {
    SuiteState.NEW: ("🆕", "new suite"), SuiteState.REMOVED: ("🗑️", "removed suite"),
    SuiteState.CHANGED: ("📝", "changed suite"), SuiteState.RENAMED: ("📝", "renamed suite"),
}


@dataclass(frozen=True)
class CommentContext:
    """What the comment needs beyond the comparison."""

    fail_reasons: list[str]
    head: Report
    marker: str = MARKER
    run_url: str | None = None
    notes: list[str] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    """Suite path → why it ran although its own file did not change."""


def _cost(value: float | None) -> str:
    return str(format_usd(value))


def _tokens(spend: Spend | None) -> str:
    return "—" if spend is None else f"{spend.tokens:,}"


def _totals_rows(comparison: Comparison) -> list[dict[str, str]]:
    totals = comparison.totals
    if not comparison.suites:
        return []  # only sample files changed: the calibration section says it all
    base, head, delta = totals.base, totals.head, totals.delta
    base_cost = None if base is None else base.total_cost_usd
    head_cost = None if head is None else head.total_cost_usd
    base_sides = [e.base for suite in comparison.suites for e in suite.evals if e.base]
    base_passed = sum(side.status is Status.PASS for side in base_sides)
    rows = [
        {"label": "Evals passing",
         "base": "—" if base is None else f"{base_passed} of {len(base_sides)}",
         "head": f"{totals.counts.passed} of {totals.counts.evals}",
         "delta": "" if base is None else str(signed_int(totals.counts.passed - base_passed))},
        {"label": "Tokens", "base": _tokens(base), "head": _tokens(head),
         "delta": str(signed_int(delta.tokens)) if base is not None else "—"},
        {"label": "Cost (model + judge)", "base": "—" if base is None else _cost(base_cost),
         "head": "—" if head is None else _cost(head_cost),
         "delta": str(signed_usd(delta.total_cost_usd)) if base is not None else "—"},
    ]
    return rows


def _verdict(comparison: Comparison, context: CommentContext) -> dict[str, Any]:
    counts = comparison.totals.counts
    if context.fail_reasons:
        return {"icon": "❌", "headline": "check failed", "reasons": context.fail_reasons}
    protocols = comparison.protocols
    if not comparison.suites and not comparison.diagnostics and not comparison.calibration \
            and protocols is None:
        return {"icon": "✅", "headline": "no eval changes", "reasons": []}
    headline = f"{counts.passed} of {counts.evals} evals pass"
    if not comparison.suites and comparison.calibration:
        files = len(comparison.calibration)
        headline = f"{files} sample file{'' if files == 1 else 's'} graded"
    if protocols is not None:
        cases = f"{protocols.counts.passed} of {protocols.counts.cases} protocol cases pass"
        headline = f"{headline}, {cases}" if comparison.suites else cases
    return {"icon": "✅", "headline": headline, "reasons": []}


def _alert(comparison: Comparison) -> str | None:
    if comparison.alert is None:
        return None
    alert = comparison.alert
    return (f"{format_usd(alert.base_cost)} → {format_usd(alert.head_cost)} "
            f"({signed_usd(alert.delta_usd)}): " + "; ".join(alert.reasons))


def _turn(side: EvalSide | None) -> str:
    if side is None:
        return "—"
    return str(side.passed_on_turn) if side.passed_on_turn is not None else "—"


def _row(item: EvalComparison) -> dict[str, str]:
    head, base = item.head, item.base
    side = head or base
    assert side is not None
    status = f"{STATUS_ICON[side.status]} {side.status.value}"
    if head is None:
        status = "🗑️ removed"
    turn = _turn(head)
    if base is not None and head is not None and base.passed_on_turn != head.passed_on_turn:
        turn += f" (base {_turn(base)})"
    return {
        "name": item.name,
        "status": status,
        "turn": turn,
        "turns": "—" if head is None else str(head.turns),
        "tokens": _tokens(head),
        "cost": "—" if head is None else _cost(head.total_cost_usd),
        "delta": str(signed_usd(item.delta.total_cost_usd)),
    }


def _check_view(turn: TurnResult) -> list[dict[str, str]]:
    return [
        {"indent": "  " * check.depth,
         "icon": "💥" if check.error else ("✅" if check.passed else "❌"),
         "detail": check.detail + (f" — {check.error}" if check.error else "")}
        for check in turn.checks
    ]


def _transcript(result: EvalResult) -> dict[str, Any]:
    outcome = {
        Status.PASS: f"passed on turn {result.passed_on_turn}",
        Status.FAIL: f"failed after {len(result.turns)} turn(s)",
        Status.ERROR: "error",
    }[result.status]
    turns = [
        {"number": t.turn, "prompt": t.prompt, "response": t.response,
         "tokens": f"{t.usage.total:,}", "cost": _cost(t.cost_usd),
         "latency": f"{t.latency_ms:,.0f} ms", "checks": _check_view(t)}
        for t in result.turns
    ]
    return {"name": result.name, "icon": STATUS_ICON[result.status], "outcome": outcome,
            "turns": turns, "error": result.error}


def _head_evals(head: Report, path: str) -> dict[str, EvalResult]:
    for suite in head.suites:
        if suite.path == path:
            return {e.name: e for e in suite.evals}
    return {}


def _suite_view(suite: SuiteComparison, head: Report, compact: bool) -> dict[str, Any]:
    icon, label = SUITE_STATE[suite.state]
    evals = suite.evals
    hidden = 0
    if compact:
        changed = [e for e in evals if e.transition is not Transition.UNCHANGED]
        shown = changed[:MAX_ROWS_WHEN_COMPACT]
        hidden, evals = len(evals) - len(shown), shown
    results = _head_evals(head, suite.path)
    transcripts = [_transcript(results[e.name]) for e in evals if e.name in results]
    cassette = next((s.cassette for s in head.suites if s.path == suite.path), None)
    return {
        "name": suite.name, "path": suite.path, "previous_path": suite.previous_path,
        "state_icon": icon, "state_label": label, "model": suite.model, "cassette": cassette,
        "rows": [_row(e) for e in evals], "hidden_rows": hidden, "transcripts": transcripts,
    }


def _transitions(comparison: Comparison) -> list[dict[str, str]]:
    return [
        {"icon": TRANSITION_ICON[item.transition], "eval": item.name, "suite": suite.name,
         "label": _transition_label(item)}
        for suite in comparison.suites
        for item in suite.evals
        if item.transition not in (Transition.UNCHANGED,)
    ]


def _transition_label(item: EvalComparison) -> str:
    if item.transition is Transition.TURN_CHANGED and item.base and item.head:
        before, after = item.base.passed_on_turn, item.head.passed_on_turn
        direction = "now needs" if item.regression else "now passes on"
        return f"{direction} turn {after}, base passed on turn {before}"
    if item.transition is Transition.BROKEN and item.head is not None:
        return f"broken: now {item.head.status.value}" + (
            f" ({item.error})" if item.error else "")
    return item.label


def _reasons(reasons: dict[str, list[str]]) -> list[dict[str, str]]:
    return [{"suite": suite, "why": "; ".join(why)} for suite, why in sorted(reasons.items())]


def _diagnostics(items: Iterable[Diagnostic]) -> tuple[list[Diagnostic], int]:
    listed = list(items)
    return listed[:MAX_DIAGNOSTICS], max(0, len(listed) - MAX_DIAGNOSTICS)


def _footer(comparison: Comparison, context: CommentContext, exact_time: bool) -> str:
    source = comparison.price_source
    # The PR comment shows the pricing date only: with the instant of each run in it, a
    # re-run with the same results would always edit the comment (`comment: on-change`).
    when = source.timestamp if exact_time else source.timestamp[:10]
    parts = [
        f"base {comparison.base_commit[:12]}" if comparison.base_commit else "no base run",
        f"head {comparison.head_commit[:12]}" if comparison.head_commit else "head",
        f"{comparison.mode} mode",
        f"prices: {source.library} {source.version} at {when}",
    ]
    if comparison.price_note:
        parts.append(comparison.price_note)
    parts.extend(context.notes)
    return " · ".join(parts)


def _link_target(url: str | None) -> str | None:
    """`url` for a Markdown link's destination. Not through `md_text`: a backslash escape
    in a bare URL ends up in GitHub's autolink (`octo\\-org` → `octo%5C-org`)."""
    return None if not url else quote(url, safe=":/?#@!$&'*+,;=%~-._")


def render(comparison: Comparison, context: CommentContext, detail: int,
           exact_time: bool = False) -> str:
    diagnostics, hidden = _diagnostics(comparison.diagnostics)
    suites = [_suite_view(s, context.head, compact=detail < FULL) for s in comparison.suites]
    return render_template(
        _ENVIRONMENT, "comment.md.j2",
        marker=context.marker, verdict=_verdict(comparison, context),
        totals=_totals_rows(comparison), alert=_alert(comparison),
        cost_note=comparison.cost_note, transitions=_transitions(comparison), suites=suites,
        reasons=_reasons(context.reasons),
        detail=detail, has_transcripts=any(s["transcripts"] for s in suites),
        diagnostics=diagnostics, hidden_diagnostics=hidden,
        footer=_footer(comparison, context, exact_time), run_url=_link_target(context.run_url),
        calibration=calibration_view(comparison.calibration, context.head),
        protocol=protocol_view(comparison.protocols, context.head, comparison.has_base, detail),
    )


def render_comment(comparison: Comparison, context: CommentContext,
                   limit: int = COMMENT_LIMIT) -> str:
    """The richest rendering that fits in `limit` characters."""
    body = ""
    for detail in (FULL, NO_TRANSCRIPTS, SUMMARY_ONLY):
        body = render(comparison, context, detail)
        if len(body) <= limit:
            return body
    return _cut(body, context.marker, limit)


def _cut(body: str, marker: str, limit: int) -> str:
    """The first whole lines of `body` that fit with a note, keeping the marker once."""
    kept = body[: max(limit - len(CUT_NOTE) - len(marker) - 1, 0)]
    # Whole lines only, so no escape sequence or table row is left half written.
    kept = kept[: kept.rfind("\n") + 1]
    return kept + (CUT_NOTE if marker in kept else CUT_NOTE + marker + "\n")


def render_summary(comparison: Comparison, context: CommentContext) -> str:
    """The full report for `$GITHUB_STEP_SUMMARY` (the writer caps it at 1 MiB)."""
    return render(comparison, context, FULL, exact_time=True)


_ENVIRONMENT = make_environment()
