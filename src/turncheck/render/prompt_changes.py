"""What changed in what an eval sent between base and head: a turn's prompt, the system
prompt, the tools offered. Shared by the PR comment and the HTML report.

A change is shown as both texts and, when either is long, as a compact unified diff
(difflib). All of it is untrusted PR text: this module only bounds it (characters
diffed, lines and characters shown); each renderer escapes it as it escapes prompts.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turncheck.report.run import EvalResult, Report, SuiteResult, TurnResult

SHORT_TEXT_CHARS = 160
"""A one-line text up to this long is shown whole on both sides, without a diff."""
MAX_DIFFED_CHARS = 20_000
"""Characters of each side that are diffed: difflib's work grows with the square of
the lines, and the text is untrusted."""
MAX_DIFF_LINE_CHARS = 160
COMMENT_DIFF_LINES = 24
SUMMARY_DIFF_LINES = 200
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True)
class Diff:
    lines: list[str]
    """`-` base, `+` head, ` ` context, `@@` hunk header; each cut to a bounded length."""
    cut_lines: int = 0
    """Diff lines left out to keep it short."""
    cut_chars: bool = False
    """The texts were longer than what was diffed."""

    @property
    def note(self) -> str:
        parts = []
        if self.cut_lines:
            lines = "line" if self.cut_lines == 1 else "lines"
            parts.append(f"{self.cut_lines:,} more diff {lines} not shown")
        if self.cut_chars:
            parts.append(f"only the first {MAX_DIFFED_CHARS:,} characters compared")
        return "; ".join(parts)

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class Change:
    """One text that differs between base and head."""

    what: str
    """`system prompt`, `tools`, `turn 2 prompt`."""
    base: str
    head: str
    diff: Diff | None
    """None when both texts are short enough to read side by side."""
    summary: str = ""
    """A one-line account (tools: which were added, removed or changed)."""
    inline: bool = True
    """Without a diff, both texts are short enough to show in a line each (the tools'
    JSON never is: their summary names them)."""


def is_short(text: str) -> bool:
    return "\n" not in text and len(text) <= SHORT_TEXT_CHARS


def _pieces(text: str) -> list[str]:
    """Lines, with long lines split after sentence ends so an edited sentence in a
    one-paragraph prompt shows as that sentence rather than the whole paragraph."""
    pieces: list[str] = []
    for line in text.split("\n"):
        pieces.extend(_SENTENCE_END.split(line) if len(line) > MAX_DIFF_LINE_CHARS else [line])
    return pieces


def _clip(line: str) -> str:
    return line if len(line) <= MAX_DIFF_LINE_CHARS else line[:MAX_DIFF_LINE_CHARS] + "…"


def text_diff(base: str, head: str, max_lines: int) -> Diff:
    """A unified diff of `base` → `head` (one line of context), at most `max_lines`."""
    cut_chars = len(base) > MAX_DIFFED_CHARS or len(head) > MAX_DIFFED_CHARS
    produced = difflib.unified_diff(_pieces(base[:MAX_DIFFED_CHARS]),
                                    _pieces(head[:MAX_DIFFED_CHARS]), n=1, lineterm="")
    lines = [_clip(line) for line in produced
             if not line.startswith(("--- ", "+++ "))]
    return Diff(lines=lines[:max_lines], cut_lines=max(0, len(lines) - max_lines),
                cut_chars=cut_chars)


def text_change(what: str, base: str, head: str, max_lines: int) -> Change:
    diff = None if is_short(base) and is_short(head) else text_diff(base, head, max_lines)
    return Change(what=what, base=base, head=head, diff=diff)


def prompt_changed(base: TurnResult | None, head: TurnResult | None) -> bool:
    """Both sides sent this turn, with different prompts (a long prompt kept as an
    excerpt also differs when its digest does)."""
    if base is None or head is None:
        return False
    digests = (base.prompt_sha256, head.prompt_sha256)
    return base.prompt != head.prompt or (None not in digests and digests[0] != digests[1])


def tools_text(tools: Sequence[dict[str, Any]]) -> str:
    """Tool definitions as stable, diffable text."""
    return json.dumps(list(tools), indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return str(name) if name is not None else "?"


def tools_summary(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]]) -> str:
    """`added lookup; removed search; changed get_weather`."""
    before = {_tool_name(t): t for t in base}
    after = {_tool_name(t): t for t in head}
    parts = []
    for label, names in (("added", [n for n in after if n not in before]),
                         ("removed", [n for n in before if n not in after]),
                         ("changed", [n for n in after if n in before and
                                      after[n] != before[n]])):
        if names:
            parts.append(f"{label} {', '.join(names)}")
    return "; ".join(parts) or "reordered"


@dataclass(frozen=True)
class Sent:
    """What an eval sent besides its turns' prompts."""

    system_prompt: str
    tools: list[dict[str, Any]]


def sent_by_key(report: Report | None) -> dict[tuple[str, str], Sent]:
    """(suite path, eval name) → what the eval sent, for every eval of `report`."""
    if report is None:
        return {}
    return {(suite.path, e.name): sent(suite, e) for suite in report.suites for e in suite.evals}


def sent(suite: SuiteResult, result: EvalResult) -> Sent:
    return Sent(system_prompt=suite.system_prompt or "", tools=suite.tools_of(result))


def setup_changes(base: Sent | None, head: Sent | None, max_lines: int) -> list[Change]:
    """The system prompt and the tools, where they differ between the two sides."""
    if base is None or head is None:
        return []
    changes = []
    if base.system_prompt != head.system_prompt:
        changes.append(text_change("system prompt", base.system_prompt, head.system_prompt,
                                   max_lines))
    if base.tools != head.tools:
        changes.append(tools_change(base.tools, head.tools, max_lines))
    return changes


def tools_change(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]],
                 max_lines: int) -> Change:
    """Which tools were added, removed or changed, and a diff of the changed ones'
    definitions (an added or removed tool is named, not shown)."""
    before = {_tool_name(t): t for t in base}
    after = {_tool_name(t): t for t in head}
    changed = [n for n in after if n in before and before[n] != after[n]]
    diff = text_diff(tools_text([before[n] for n in changed]),
                     tools_text([after[n] for n in changed]), max_lines) if changed else None
    return Change(what="tools", base=tools_text(base), head=tools_text(head), diff=diff,
                  summary=tools_summary(base, head), inline=False)
