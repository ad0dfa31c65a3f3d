"""The PR comment, the step summary and the check run's text, rendered from a comparison.

A reviewer reads the heading (the verdict: what regressed, on which turn, what it costs),
the counts under it, then the findings in order of severity: files that could not run,
errors, regressions, likely regressions, improvements, the rest; still-failing evals
stay folded. Transcripts are shown only where they matter (regressed, errored, failing
or new evals), base beside head, turn by turn. When nothing changed that matters the
comment is short and says so.

GitHub rejects comment bodies over 65,536 characters; the comment is rendered at
decreasing detail until its UTF-8 size fits (so it fits whatever unit GitHub counts).
The frame — heading, counts, files that could not run, regressions and the footer with
its links — survives every cut. The step summary and the check run's text get the full,
severity-ordered detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from turncheck.compare.policy import FailOn, one_sample_note
from turncheck.diagnostics import Diagnostic
from turncheck.render.app_calls import APP_CALLS_NOTE, app_call_suites
from turncheck.render.app_changes import change_views, changed_app_suites
from turncheck.render.budget_text import budget_lines
from turncheck.render.calibration_comment import calibration_view
from turncheck.render.comment_transcript import change_view, transcripts, without_diff
from turncheck.render.cost_causes import answers_change, cost_causes
from turncheck.render.display import EVAL_SUITE, Capped, Money, suite_heading
from turncheck.render.headline import Headline, headline
from turncheck.render.latency import latency_rows
from turncheck.render.prompt_changes import COMMENT_DIFF_LINES, SUMMARY_DIFF_LINES, DiffBudget
from turncheck.render.protocol_comment import protocol_view
from turncheck.render.severity import (
    ICON,
    NEWS,
    TITLE,
    WORSE,
    Finding,
    Group,
    eval_group,
    fails_check,
    findings,
    fired,
)
from turncheck.report.comparison import Comparison, EvalComparison, EvalSide
from turncheck.report.results import Status
from turncheck.report.run import Report
from turncheck.text.counts import counted
from turncheck.text.environment import make_environment, render_template
from turncheck.text.money import MoneyRow

COMMENT_LIMIT = 65_536
MARKER = "<!-- turncheck:comment -->"
GROUP_CAP = 15
"""Rows per group in the comment; the step summary lists them all."""
TRANSCRIPT_CAP = 6
DIAGNOSTIC_CAP = 20
COST_SOURCES = 5
FULL, NO_TABLES, NO_TRANSCRIPTS, BRIEF, FRAME = 4, 3, 2, 1, 0
TRANSCRIPT_GROUPS = (Group.REGRESSION, Group.ERROR, Group.BROKEN, Group.LIKELY_REGRESSION,
                     Group.LATER_TURN, Group.NOT_LIKE_FOR_LIKE, Group.NEW, Group.NOT_RUN,
                     Group.STILL_FAILING)
"""Whose transcripts are shown, in this order; still-failing ones only in the summary."""


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
    base: Report | None = None
    blob_url: str | None = None
    """`https://github.com/OWNER/REPO/blob/HEAD_SHA/WORKDIR/`: file:line links at head."""
    html_artifact: str | None = None
    """The artifact of this run holding the browsable HTML report, when one was written."""
    banner: str | None = None
    """Trusted Markdown shown above the verdict, e.g. that the report is unverified."""
    linkable: frozenset[str] | None = None
    """An untrusted report's: the only file paths that may become links (the commit's
    own files, checked by the caller); None links every plain relative path."""


@dataclass(frozen=True)
class _Caps:
    rows: int
    transcripts: int
    diagnostics: int


_COMMENT_CAPS = _Caps(GROUP_CAP, TRANSCRIPT_CAP, DIAGNOSTIC_CAP)
_FRAME_CAPS = _Caps(5, 0, 5)
_SUMMARY_CAPS = _Caps(100_000, 200, 100_000)


# -- findings --------------------------------------------------------------------------


def _finding_view(finding: Finding) -> dict[str, Any]:
    cost = MoneyRow.of(finding.base_cost, finding.head_cost, finding.has_base)
    details = [finding.change]
    if finding.evidence:
        details.append(finding.evidence)
    if finding.has_base and finding.head_cost is not None and finding.base_cost is not None \
            and cost.delta not in ("±$0", "n/a"):
        details.append(f"cost {cost.change}")
    return {"icon": finding.icon, "name": finding.name, "suite": finding.suite,
            "detail": " · ".join(details), "flaky": finding.flaky,
            "case": finding.kind == "case"}


def _groups(found: Sequence[Finding], cap: int,
            conditions: Sequence[FailOn] = ()) -> list[dict[str, Any]]:
    """The news groups in order of severity. Errors and budget stops are one row per
    cause (what was not judged or not run, and why); rows that fail the check outside
    the news (a flaky or failing eval under `fail-on: flaky`/`failure`) get a group of
    their own after the changes for the worse, so every row failing the check is listed."""
    groups = []
    for group in NEWS:
        members = [f for f in found if f.group is group]
        if not members:
            continue
        if group in (Group.ERROR, Group.NOT_RUN):
            rows = _collapsed(members, cap)
            groups.append({"icon": ICON[group], "title": TITLE[group], "count": len(members),
                           "rows": rows, "hidden": 0})
            continue
        groups.append({"icon": ICON[group], "title": TITLE[group], "count": len(members),
                       "rows": [_finding_view(f) for f in members[:cap]],
                       "hidden": max(0, len(members) - cap)})
    others = [f for f in found if f.group not in NEWS and fails_check(f, conditions)]
    if others:
        after = sum(1 for g in groups if g["title"] in {TITLE[w] for w in (Group.ERROR, *WORSE)})
        groups.insert(after, {"icon": "⛔", "title": "Also fail the check",
                              "count": len(others),
                              "rows": [_finding_view(f) for f in others[:cap]],
                              "hidden": max(0, len(others) - cap)})
    return groups


def _collapsed(members: Sequence[Finding], cap: int) -> list[dict[str, Any]]:
    """One row per suite and cause: `**a, b, c and 5 more** · suite · not run: …`."""
    by_cause: dict[tuple[str, str], list[Finding]] = {}
    for finding in members:
        by_cause.setdefault((finding.suite, _cause_text(finding)), []).append(finding)
    rows = []
    for (suite, cause), items in by_cause.items():
        names = ", ".join(f.name for f in items[:cap])
        more = f" and {len(items) - cap} more" if len(items) > cap else ""
        rows.append({"icon": items[0].icon, "name": names + more, "suite": suite,
                     "detail": cause, "flaky": False, "case": items[0].kind == "case"})
    return rows


def _cause_text(finding: Finding) -> str:
    if finding.group is Group.NOT_RUN:
        return f"{finding.change}; neither a pass nor a fail"
    return finding.change


# -- files that could not run, and warnings ---------------------------------------------


def _diagnostic_rows(diagnostics: Sequence[Diagnostic], blob_url: str | None, cap: int,
                     linkable: frozenset[str] | None = None,
                     ) -> tuple[list[dict[str, str | None]], int]:
    """Errors first; identical problems collapsed into one row with a count."""
    ordered = sorted(diagnostics, key=lambda d: (not d.is_error, d.file, d.line))
    collapsed: dict[tuple[str, str], list[Diagnostic]] = {}
    for item in ordered:
        collapsed.setdefault((item.severity, item.message), []).append(item)
    rows = []
    for (severity, message), items in collapsed.items():
        first = items[0]
        rows.append({"where": f"{first.file}:{first.line}",
                     "link": _blob(blob_url, first, linkable),
                     "severity": severity, "message": message,
                     "more": "" if len(items) == 1 else f" (×{len(items)})"})
    shown = Capped.of(rows, cap)
    return shown.shown, shown.hidden


def _blob(blob_url: str | None, diagnostic: Diagnostic,
          linkable: frozenset[str] | None = None) -> str | None:
    """A link to the file's line at head: only for a plain relative path (no `..`, which
    a browser would resolve out of the repository) and, for an untrusted report, only
    for one of the commit's own files."""
    path = diagnostic.file
    if not blob_url or (linkable is not None and path not in linkable):
        return None
    if not path or path.startswith("/") or any(s in ("", ".", "..") for s in path.split("/")):
        return None
    return blob_url + quote(path, safe="/") + f"#L{max(int(diagnostic.line), 1)}"


# -- cost ------------------------------------------------------------------------------


def _cost_rows(comparison: Comparison) -> list[dict[str, str]]:
    if not comparison.suites and comparison.protocols is None:
        return []
    totals = comparison.totals
    money = Money(totals.base, totals.head, comparison.has_base)
    return [line.cells() for line in money.lines()]


def _cost_sources(comparison: Comparison) -> list[dict[str, str]]:
    """The evals behind most of the cost change, and the turns that explain it."""
    if not comparison.has_base:
        return []
    items = [(suite.name, item) for suite in comparison.suites for item in suite.evals
             if item.delta.total_cost_usd]
    items.sort(key=lambda pair: -abs(pair[1].delta.total_cost_usd or 0))
    sources = []
    for suite, item in items[:COST_SOURCES]:
        money = MoneyRow.of(item.base.total_cost_usd if item.base else 0.0,
                            item.head.total_cost_usd if item.head else 0.0)
        sources.append({"name": item.name, "suite": suite, "change": money.change,
                        "why": _cost_reason(item)})
    return sources


def _cost_reason(item: EvalComparison) -> str:
    base, head = item.base, item.head
    if base is None:
        return "new eval"
    if head is None:
        return "removed eval"
    if head.status is Status.SKIPPED:
        return "a budget stopped it: turns not sent cost nothing"
    if head.status is Status.ERROR:
        return "it errored: turns not answered cost nothing"
    parts = []
    if head.turns != base.turns:
        more = "more" if head.turns > base.turns else "fewer"
        turns = f"{head.turns} turn{'' if head.turns == 1 else 's'}"
        parts.append(f"{turns} instead of {base.turns} ({_why_turns(base, head, more)})")
    if head.app_model_calls != base.app_model_calls and head.app_model_calls is not None:
        parts.append(f"the app made {counted(head.app_model_calls, 'model call')} instead of "
                     f"{base.app_model_calls or 0}")
    parts += cost_causes(base, head)
    if (head.judge_cost_usd or 0) != (base.judge_cost_usd or 0):
        parts.append("judge " + MoneyRow.of(base.judge_cost_usd, head.judge_cost_usd).change)
    return "; ".join(parts) or answers_change(base, head)


def _why_turns(base: EvalSide, head: EvalSide, more: str) -> str:
    """A simulated user decides when its conversation ends; scripted follow-ups fire."""
    if base.simulator_tokens or head.simulator_tokens:
        return "the simulated user's conversation ran longer" if more == "more" else \
            "the simulated user's conversation ended sooner"
    return f"{more} follow-ups fire"


def _alert(comparison: Comparison) -> str | None:
    alert = comparison.alert
    if alert is None:
        return None
    return "; ".join(alert.reasons)


# -- transcripts -----------------------------------------------------------------------


def _transcripts(comparison: Comparison, context: CommentContext, found: Sequence[Finding],
                 caps: _Caps) -> list[dict[str, Any]]:
    """Evals that fail the check, then regressed, errored, broken, likely regressed,
    later-turn, new and budget-stopped evals (and, in the step summary, still failing
    ones): base beside head."""
    previous = {s.path: s.previous_path or s.path for s in comparison.suites}
    groups = TRANSCRIPT_GROUPS if caps is _SUMMARY_CAPS else TRANSCRIPT_GROUPS[:-1]
    conditions = fired(context.fail_reasons)
    # An eval that errored before its first answer has nothing to show but its error,
    # which its group's row already says.
    shown = [f for f in found if f.kind == "eval"
             and (f.group in groups or fails_check(f, conditions))
             and not (f.group is Group.ERROR and not f.head_turns)]
    shown.sort(key=lambda f: (not fails_check(f, conditions), _transcript_rank(f)))
    return transcripts(shown[:caps.transcripts], context.head, context.base, previous,
                       full=caps is _SUMMARY_CAPS)


def _transcript_rank(finding: Finding) -> int:
    return TRANSCRIPT_GROUPS.index(finding.group) if finding.group in TRANSCRIPT_GROUPS \
        else len(TRANSCRIPT_GROUPS)


# -- per-suite tables (folded) ---------------------------------------------------------


def _row(item: EvalComparison) -> dict[str, str]:
    head, base = item.head, item.base
    group = eval_group(item)
    side = head or base
    assert side is not None
    status = "removed" if head is None else \
        "not run" if head.status is Status.SKIPPED else head.status.value
    turn = "—" if head is None or head.passed_on_turn is None else str(head.passed_on_turn)
    if base is not None and head is not None and base.passed_on_turn != head.passed_on_turn:
        turn += f" (was {base.passed_on_turn or '—'})"
    repeated = head is not None and head.samples + head.errored + head.skipped > 1
    if repeated and head is not None:  # samples pass on different turns: their spread
        turn = ", ".join(f"✗ ×{n}" if t == "fail" else f"{t} ×{n}"
                         for t, n in head.turn_of_pass.items()) or "—"
    money = MoneyRow.of(base.total_cost_usd if base else None,
                        head.total_cost_usd if head else None, base is not None)
    return {"name": item.name, "status": f"{ICON[group]} {status}", "turn": turn,
            "turns": "—" if head is None or repeated else str(head.turns),
            "tokens": "—" if head is None else f"{head.tokens + head.judge_tokens:,}",
            "cost": money.head, "delta": money.change if base is not None else "—"}


APP_PROMPT_DIFFS = 3
"""System prompt diffs of the app's calls in the comment; the step summary has them all."""
APP_CHANGE_LINES = 8
"""Changes shown per app suite in the comment (the most telling first)."""


def _app_changes(comparison: Comparison, context: CommentContext, full: bool
                 ) -> list[dict[str, Any]]:
    """Per app suite, what the app sent or did differently: short lines, a system prompt
    as a line diff (at most `APP_PROMPT_DIFFS` diffs in the comment)."""
    budget, diffs_left = DiffBudget(), APP_PROMPT_DIFFS
    suites = []
    for suite in changed_app_suites(comparison):
        views = change_views(suite, SUMMARY_DIFF_LINES if full else COMMENT_DIFF_LINES, budget)
        shown = views if full else views[:APP_CHANGE_LINES]
        rows = []
        for view in shown:
            prompt = None if view.prompt is None else change_view(view.prompt)
            if view.prompt is not None and not full:
                diffs_left -= 1
                if diffs_left < 0:
                    prompt = without_diff(view.prompt, "the diff is in the step summary")
            rows.append({"line": view.line, "prompt": prompt})
        suites.append({"name": suite.name, "path": suite.path,
                       "why": "; ".join(context.reasons.get(suite.path, [])),
                       "changes": rows, "hidden": len(views) - len(shown)})
    return suites


def _suite_label(path: str, state: str, context: CommentContext) -> str:
    """`changed suite`; a suite run because a file it depends on changed names it."""
    why = context.reasons.get(path)
    if state == "changed" and why:
        return f"suite run because {'; '.join(why)}"
    return suite_heading(EVAL_SUITE, state).label


def _suite_tables(comparison: Comparison, context: CommentContext) -> list[dict[str, Any]]:
    return [{"icon": suite_heading(EVAL_SUITE, s.state).icon,
             "label": _suite_label(s.path, s.state, context),
             "name": s.name, "path": s.path, "previous_path": s.previous_path,
             "model": s.model, "rows": [_row(e) for e in s.evals]}
            for s in comparison.suites]


# -- footer ----------------------------------------------------------------------------


def _footer(comparison: Comparison, context: CommentContext, exact_time: bool) -> str:
    source = comparison.price_source
    # The PR comment shows the pricing date only: with the instant of each run in it, a
    # re-run with the same results would always edit the comment (`comment: on-change`).
    when = source.timestamp if exact_time else source.timestamp[:10]
    parts = [
        f"base {comparison.base_commit[:12]}" if comparison.base_commit
        else "base" if comparison.has_base else "no base run",
        f"head {comparison.head_commit[:12]}" if comparison.head_commit else "head",
        f"{comparison.mode} mode",
        f"prices: {source.library} {source.version} at {when}",
    ]
    if comparison.price_note:
        parts.append(comparison.price_note)
    if comparison.baseline_note:
        parts.append(comparison.baseline_note)
    if note := one_sample_note(comparison):
        parts.append(note)
    parts.extend(context.notes)
    return " · ".join(parts)


def _link_target(url: str | None) -> str | None:
    """`url` for a Markdown link's destination. Not through `md_text`: a backslash escape
    in a bare URL ends up in GitHub's autolink (`octo\\-org` → `octo%5C-org`)."""
    return None if not url else quote(url, safe=":/?#@!$&'*+,;=%~-._")


# -- rendering -------------------------------------------------------------------------


def comment_headline(comparison: Comparison, fail_reasons: Sequence[str]) -> Headline:
    return headline(comparison, findings(comparison), fail_reasons)


def render(comparison: Comparison, context: CommentContext, detail: int,
           exact_time: bool = False, caps: _Caps = _COMMENT_CAPS) -> str:
    found = findings(comparison)
    top = headline(comparison, found, context.fail_reasons)
    errors = [d for d in comparison.diagnostics if d.is_error]
    diagnostics, hidden = _diagnostic_rows(errors, context.blob_url, caps.diagnostics,
                                           context.linkable)
    # Warnings did not stop anything from running: a folded section of their own.
    warned = [d for d in comparison.diagnostics if not d.is_error] if detail > FRAME else []
    warnings, hidden_warnings = _diagnostic_rows(warned, context.blob_url, caps.diagnostics,
                                                 context.linkable)
    groups = _groups(found, caps.rows, fired(context.fail_reasons))
    if detail <= FRAME:  # the frame: only what fails the check survives among the findings
        groups = [g for g in groups if g["title"] in (TITLE[Group.REGRESSION],
                                                      TITLE[Group.ERROR],
                                                      TITLE[Group.BROKEN],
                                                      TITLE[Group.NOT_RUN],
                                                      "Also fail the check")]
    still = [_finding_view(f) for f in found if f.group is Group.STILL_FAILING]
    return render_template(
        _ENVIRONMENT, "comment.md.j2",
        marker=context.marker, banner=context.banner, headline=top,
        fail_reasons=context.fail_reasons,
        diagnostics=diagnostics, hidden_diagnostics=hidden, groups=groups,
        warnings=warnings, hidden_warnings=hidden_warnings, warning_count=len(warned),
        still_failing=still[:caps.rows], hidden_still_failing=max(0, len(still) - caps.rows),
        alert=_alert(comparison), cost_note=comparison.cost_note,
        budget=budget_lines(context.head), budget_stopped=context.head.budget_stopped,
        cost=_cost_rows(comparison) if detail > FRAME else [],
        cost_sources=_cost_sources(comparison) if detail > BRIEF else [],
        app_calls=app_call_suites(comparison.suites), app_calls_note=APP_CALLS_NOTE,
        reasons=[{"suite": s, "why": "; ".join(w)} for s, w in sorted(context.reasons.items())],
        transcripts=_transcripts(comparison, context, found, caps)
        if detail >= NO_TABLES else [],
        tables=_suite_tables(comparison, context) if detail >= FULL else [],
        app_changes=_app_changes(comparison, context, caps is _SUMMARY_CAPS)
        if detail > FRAME else [],
        latency=latency_rows(comparison) if detail > FRAME else [],
        detail=detail, full_responses=caps is _SUMMARY_CAPS,
        footer=_footer(comparison, context, exact_time),
        run_url=_link_target(context.run_url),
        html_artifact=context.html_artifact,
        calibration=calibration_view(comparison.calibration, context.head),
        protocol=protocol_view(comparison.protocols, context.head, comparison.has_base,
                               min(detail - 1, 3), context.base) if detail > BRIEF else
        protocol_view(None, context.head, comparison.has_base, 1),
    )


def _size(body: str) -> int:
    return len(body.encode("utf-8"))


def comment_markdown(comparison: Comparison, context: CommentContext,
                   limit: int = COMMENT_LIMIT) -> str:
    """The richest rendering whose UTF-8 size fits in `limit` bytes."""
    body = ""
    for detail in (FULL, NO_TABLES, NO_TRANSCRIPTS, BRIEF):
        body = render(comparison, context, detail)
        if _size(body) <= limit:
            return body
    body = render(comparison, context, FRAME, caps=_FRAME_CAPS)
    if _size(body) <= limit:
        return body
    return _cut(body, context.marker, limit)


CUT_NOTE = (
    "\n_The rest of this report is omitted to fit GitHub's comment size limit; the workflow "
    "run's step summary and the JSON report have everything._\n"
)


def _cut(body: str, marker: str, limit: int) -> str:
    """The first whole lines of `body` that fit with a note, keeping the marker once."""
    room = max(limit - _size(CUT_NOTE) - _size(marker) - 1, 0)
    kept = body.encode("utf-8")[:room].decode("utf-8", "ignore")
    kept = kept[: kept.rfind("\n") + 1]
    # The marker must stay the body's start: the sticky comment is found by it.
    return kept + CUT_NOTE if kept.startswith(marker) else marker + "\n" + kept + CUT_NOTE


def render_summary(comparison: Comparison, context: CommentContext) -> str:
    """The full, severity-ordered report for `$GITHUB_STEP_SUMMARY` and the check run."""
    return render(comparison, context, FULL, exact_time=True, caps=_SUMMARY_CAPS)


_ENVIRONMENT = make_environment()
