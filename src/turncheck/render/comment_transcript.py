"""The transcripts of the PR comment and step summary: base beside head, turn by turn.

Where the two sides sent something different — a turn's prompt, the system prompt, the
tools — the transcript shows both: a changed turn takes two rows, the base's prompt on
the row of the base's answer and the head's on the row of the head's; long texts get a
bounded diff (`prompt_changes`). Unchanged prompts are shown once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turncheck.engine.report import EvalResult, Report, TurnResult
from turncheck.render.prompt_changes import (
    COMMENT_DIFF_LINES,
    SUMMARY_DIFF_LINES,
    Change,
    Sent,
    prompt_changed,
    sent_by_key,
    setup_changes,
    text_change,
)
from turncheck.render.severity import Finding
from turncheck.render.tool_calls import call_text

MAX_FAILED_CHECKS = 6
MAX_PROMPT_DIFFS = 3
"""Turns whose changed prompt gets a diff in one transcript; the rows show the rest."""


def results_by_key(report: Report | None) -> dict[tuple[str, str], EvalResult]:
    if report is None:
        return {}
    return {(suite.path, e.name): e for suite in report.suites for e in suite.evals}


def turn_cell(turn: TurnResult | None) -> str:
    if turn is None:
        return "—"
    checks = " ".join(("💥" if c.error else "✅" if c.passed else "❌") for c in turn.checks)
    calls = "".join(f"🔧 {call_text(call)} " for call in turn.tool_calls)
    return f"{checks} {calls}{turn.response}"


def _turn(result: EvalResult | None, index: int) -> TurnResult | None:
    return result.turns[index] if result is not None and index < len(result.turns) else None


def _rows(number: int, base: TurnResult | None, head: TurnResult | None) -> list[dict[str, Any]]:
    """One row per turn; two when the prompt changed, each prompt beside its own answer."""
    if prompt_changed(base, head):
        assert base is not None and head is not None
        return [{"number": number, "side": "base", "prompt": base.prompt,
                 "base": turn_cell(base), "head": ""},
                {"number": number, "side": "head", "prompt": head.prompt,
                 "base": "", "head": turn_cell(head)}]
    either = head or base
    return [{"number": number, "side": "", "prompt": either.prompt if either else "",
             "base": turn_cell(base), "head": turn_cell(head)}]


def change_view(change: Change) -> dict[str, Any]:
    return {"what": change.what, "summary": change.summary, "base": change.base,
            "head": change.head, "diff": None if change.diff is None else change.diff.text(),
            "note": "" if change.diff is None else change.diff.note, "inline": change.inline}


def _setup_views(changes: Sequence[Change], name: str,
                 shown: dict[tuple[str, str, str], str]) -> list[dict[str, Any]]:
    """A suite-wide change (the same system prompt or tools edit in every eval) in full
    once; later transcripts refer to the first, which keeps six of them in the comment."""
    views = []
    for change in changes:
        key = (change.what, change.base, change.head)
        first = shown.setdefault(key, name)
        if first == name:
            views.append(change_view(change))
            continue
        again = f"the same change as in {first} above"
        views.append({**change_view(change), "diff": None, "inline": False, "note": "",
                      "summary": f"{change.summary} ({again})" if change.summary else again})
    return views


def transcript(finding: Finding, base: EvalResult | None, head: EvalResult,
               sent: tuple[Sent | None, Sent | None], full: bool,
               shown: dict[tuple[str, str, str], str] | None = None) -> dict[str, Any]:
    """`sent`: what base and head sent besides the turns' prompts; `shown`: the setup
    changes earlier transcripts showed, and whose they were."""
    diff_lines = SUMMARY_DIFF_LINES if full else COMMENT_DIFF_LINES
    count = max(len(head.turns), len(base.turns) if base else 0)
    pairs = [(index + 1, _turn(base, index), _turn(head, index)) for index in range(count)]
    rows = [row for number, b, h in pairs for row in _rows(number, b, h)]
    prompt_diffs = [text_change(f"turn {number} prompt", b.prompt, h.prompt, diff_lines)
                    for number, b, h in pairs if b is not None and h is not None
                    and prompt_changed(b, h)]
    failed = [f"turn {t.turn}: {c.detail}" + (f" — {c.error}" if c.error else "")
              for t in head.turns for c in t.checks if not c.passed]
    turns = [{"number": number, "base": b.response if b else None,
              "head": h.response if h else None, "changed": prompt_changed(b, h),
              "base_prompt": b.prompt if b else "", "head_prompt": h.prompt if h else ""}
             for number, b, h in pairs]
    return {"icon": finding.icon, "name": finding.name, "suite": finding.suite,
            "change": finding.change, "rows": rows, "has_base": base is not None,
            "setup": _setup_views(setup_changes(*sent, diff_lines), finding.name,
                                  {} if shown is None else shown),
            "prompt_diffs": [change_view(c) for c in prompt_diffs
                             if c.diff is not None][:MAX_PROMPT_DIFFS],
            "failed_checks": failed[:MAX_FAILED_CHECKS], "error": head.error, "turns": turns}


def transcripts(shown: Sequence[Finding], head: Report, base: Report | None,
                previous: dict[str, str], full: bool) -> list[dict[str, Any]]:
    """The transcripts of `shown` (in order); `previous` maps a suite's head path to its
    base path."""
    heads, bases = results_by_key(head), results_by_key(base)
    head_sent, base_sent = sent_by_key(head), sent_by_key(base)
    shown_changes: dict[tuple[str, str, str], str] = {}
    views = []
    for finding in shown:
        head_key = (finding.path, finding.name)
        base_key = (previous.get(finding.path, finding.path), finding.name)
        head_result, base_result = heads.get(head_key), bases.get(base_key)
        if head_result is not None:
            views.append(transcript(finding, base_result, head_result,
                                    (base_sent.get(base_key), head_sent.get(head_key)), full,
                                    shown_changes))
    return views
