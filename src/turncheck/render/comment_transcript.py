"""The transcripts of the PR comment and step summary: base beside head, turn by turn.

Where the two sides sent something different — a turn's prompt, the system prompt, the
tools — the transcript shows both: a changed turn takes two rows, the base's prompt on
the row of the base's answer and the head's on the row of the head's; long texts get a
bounded diff (`prompt_changes`). Unchanged prompts are shown once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from turncheck.render.display import STATUS_ICON, check_status
from turncheck.render.prompt_changes import (
    COMMENT_DIFF_LINES,
    SUMMARY_DIFF_LINES,
    Change,
    DiffBudget,
    Sent,
    prompt_changed,
    sent_by_key,
    setup_changes,
    text_change,
)
from turncheck.render.severity import Finding
from turncheck.render.tool_calls import call_text
from turncheck.report.results import SampleResult, Status, TurnResult
from turncheck.report.run import EvalResult, Report

MAX_FAILED_CHECKS = 6
MAX_PROMPT_DIFFS = 3
"""Turns whose changed prompt gets a diff in one transcript; the rows show the rest."""
COMMENT_DIFF_BUDGET = 96
"""Diff lines all transcripts of the comment show together (about 16 kB at most)."""


def results_by_key(report: Report | None) -> dict[tuple[str, str], EvalResult]:
    if report is None:
        return {}
    return {(suite.path, e.name): e for suite in report.suites for e in suite.evals}


def turn_cell(turn: TurnResult | None) -> str:
    if turn is None:
        return "—"
    checks = turn_badge([check_status(c) for c in turn.checks if c.depth == 0])
    calls = "".join(f"🔧 {call_text(call)} " for call in turn.tool_calls)
    return f"{checks} {calls}{turn.response}"


def turn_badge(statuses: Sequence[Status]) -> str:
    """One badge for the turn's checks: the worst, and how many of them when they
    disagree ("❌ 1 of 2 checks failed", not "✅ ❌")."""
    if not statuses:
        return ""
    for status, verb in ((Status.ERROR, "errored"), (Status.FAIL, "failed")):
        hits = statuses.count(status)
        if hits:
            share = "" if hits == len(statuses) else f" {hits} of {len(statuses)} checks {verb}"
            return STATUS_ICON[status] + share
    return STATUS_ICON[Status.PASS]


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


def without_diff(change: Change, why: str) -> dict[str, Any]:
    return {**change_view(change), "diff": None, "inline": False, "note": "",
            "summary": f"{change.summary} ({why})" if change.summary else why}


@dataclass
class _ChangeViews:
    """The changes of every transcript of one rendering, in order.

    A suite-wide change (the same system prompt or tools edit in every eval) is shown
    in full once; later transcripts refer to the first. In the comment all diffs
    together take at most `COMMENT_DIFF_BUDGET` lines, so six transcripts still fit in
    GitHub's limit (the step summary has them all)."""

    full: bool
    first_shown: dict[tuple[str, str, str], str] = field(default_factory=dict)
    lines_left: int = COMMENT_DIFF_BUDGET
    work: DiffBudget = field(default_factory=DiffBudget)
    """The diff work of this rendering, shared by all its transcripts."""

    @property
    def diff_lines(self) -> int:
        return SUMMARY_DIFF_LINES if self.full else COMMENT_DIFF_LINES

    def view(self, change: Change, name: str) -> dict[str, Any]:
        key = (change.what, change.base, change.head)
        first = self.first_shown.setdefault(key, name)
        if first != name:
            return without_diff(change, f"the same change as in {first} above")
        if change.diff is None or self.full:
            return change_view(change)
        if len(change.diff.lines) > self.lines_left:
            return without_diff(change, "the diff is in the step summary")
        self.lines_left -= len(change.diff.lines)
        return change_view(change)


NOT_SENT = "⏭️ not sent: a budget stopped the run before this turn"


@dataclass(frozen=True)
class _Column:
    """One side of a transcript: the conversation shown and what it is."""

    label: str
    result: EvalResult


def columns(base: EvalResult | None, head: EvalResult) -> tuple[_Column | None, _Column]:
    """Base beside head; for a repeated eval the most informative failing head sample
    (the one that went furthest: the whole failed conversation shows) beside a passing
    sample (of base, else another of head's), each labelled."""
    if not head.samples:
        return None if base is None else _Column("base", base), _Column("head", head)
    failing = [s for s in head.samples if s.status is Status.FAIL]
    shown = max(failing, key=lambda s: (len(s.turns), -s.index)) if failing \
        else head.samples[0]
    right = _Column(f"head · sample {shown.index + 1} of {len(head.samples)} "
                    f"{STATUS_ICON[shown.status]}", _as_result(head, shown))
    if base is not None and not base.samples:
        return _Column("base", base), right
    for side, result in (("base", base), ("head", head)):
        passing = [s for s in (result.samples if result else []) if s.status is Status.PASS
                   and s is not shown]
        if passing and result is not None:
            return _Column(f"{side} · sample {passing[0].index + 1} ✅",
                           _as_result(result, passing[0])), right
    return None, right


def _as_result(result: EvalResult, sample: SampleResult) -> EvalResult:
    return result.model_copy(update={"turns": sample.turns, "status": sample.status,
                                     "error": sample.error})


def transcript(finding: Finding, base_result: EvalResult | None, head_result: EvalResult,
               sent: tuple[Sent | None, Sent | None], changes: _ChangeViews) -> dict[str, Any]:
    """`sent`: what base and head sent besides the turns' prompts."""
    left, right = columns(base_result, head_result)
    base, head = (left.result if left else None), right.result
    count = max(len(head.turns), len(base.turns) if base else 0)
    pairs = [(index + 1, _turn(base, index), _turn(head, index)) for index in range(count)]
    rows = [row for number, b, h in pairs for row in _rows(number, b, h)]
    if head.status is Status.SKIPPED:  # the budget stopped it: say which turn was not sent
        rows = [{**row, "head": NOT_SENT} if row["number"] > len(head.turns)
                and row["side"] != "base" else row for row in rows]
        if count == len(head.turns):
            rows.append({"number": count + 1, "side": "", "prompt": "—", "base": "—",
                         "head": NOT_SENT})
    setup = setup_changes(*sent, changes.diff_lines, changes.work)
    diffed = (text_change(f"turn {number} prompt", b.prompt, h.prompt, changes.diff_lines,
                          changes.work)
              for number, b, h in pairs
              if b is not None and h is not None and prompt_changed(b, h))
    prompt_diffs = list(islice((c for c in diffed if c.diff is not None), MAX_PROMPT_DIFFS))
    failed = [f"turn {t.turn}: {c.detail}" + (f" — {c.error}" if c.error else "")
              for t in head.turns for c in t.checks if not c.passed]
    turns = [{"number": number, "base": b.response if b else None,
              "head": h.response if h else None, "changed": prompt_changed(b, h),
              "base_prompt": b.prompt if b else "", "head_prompt": h.prompt if h else ""}
             for number, b, h in pairs]
    return {"icon": finding.icon, "name": finding.name, "suite": finding.suite,
            "change": finding.change, "rows": rows, "has_base": base is not None,
            "base_label": left.label if left else "base", "head_label": right.label,
            "setup": [changes.view(c, finding.name) for c in setup],
            "prompt_diffs": [changes.view(c, finding.name) for c in prompt_diffs],
            "failed_checks": failed[:MAX_FAILED_CHECKS], "error": head.error, "turns": turns}


def transcripts(shown: Sequence[Finding], head: Report, base: Report | None,
                previous: dict[str, str], full: bool) -> list[dict[str, Any]]:
    """The transcripts of `shown` (in order); `previous` maps a suite's head path to its
    base path."""
    heads, bases = results_by_key(head), results_by_key(base)
    head_sent, base_sent = sent_by_key(head), sent_by_key(base)
    changes = _ChangeViews(full)
    views = []
    for finding in shown:
        head_key = (finding.path, finding.name)
        base_key = (previous.get(finding.path, finding.path), finding.name)
        head_result, base_result = heads.get(head_key), bases.get(base_key)
        if head_result is not None:
            views.append(transcript(finding, base_result, head_result,
                                    (base_sent.get(base_key), head_sent.get(head_key)),
                                    changes))
    return views
