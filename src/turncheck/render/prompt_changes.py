"""What changed in what an eval sent between base and head: a turn's prompt, the system
prompt, the tools. Shared by the PR comment and the HTML report.

A change is shown as both texts and, when either is long, as a compact unified diff.
All of it is untrusted PR text: this module bounds it (characters diffed, lines and
characters shown, and the work of diffing); each renderer escapes it as it escapes
prompts.

The diff is Myers' O(ND) algorithm on lines (long lines split at sentence ends) after
the common head and tail are set aside, so an ordinary edit costs time linear in the
text. Its work is bounded twice: per diff (`MAX_DIFF_WORK`) and per rendering
(`DiffBudget`, one per comment, summary or HTML report). Texts too different to diff
within the bound show as one hunk, the differing middle removed and added, which is
linear to produce and says so. A diff is computed once per pair of texts and reused
by every view that shows it (transcripts, HTML rows, comment, step summary, check).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from turncheck.report.results import TurnResult
from turncheck.report.run import EvalResult, Report, SuiteResult

SHORT_TEXT_CHARS = 160
"""A one-line text up to this long is shown whole on both sides, without a diff."""
MAX_DIFFED_CHARS = 20_000
"""Characters of each side that are diffed (the text is untrusted)."""
MAX_DIFF_LINE_CHARS = 160
COMMENT_DIFF_LINES = 24
SUMMARY_DIFF_LINES = 200
MAX_DIFF_WORK = 60_000
"""Steps of the line diff for one pair of texts (a few tens of milliseconds); past it the
pair shows as replaced. Any edit of a few lines in a 20,000-character prompt needs far less."""
RENDERING_DIFF_WORK = 600_000
"""Steps of all the line diffs of one rendering (a comment, a summary, an HTML report)."""
_MEMO_SIZE = 1024
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass
class DiffBudget:
    """The diff work one rendering may still spend."""

    steps_left: int = RENDERING_DIFF_WORK


@dataclass(frozen=True)
class Diff:
    lines: list[str]
    """`-` base, `+` head, ` ` context, `@@` hunk header; each cut to a bounded length."""
    cut_lines: int = 0
    """Diff lines left out to keep it short."""
    cut_chars: bool = False
    """The texts were longer than what was diffed."""
    replaced: bool = False
    """Too different to compare line by line: the differing middle is shown as replaced."""

    @property
    def note(self) -> str:
        parts = []
        if self.replaced:
            parts.append("too different to compare line by line: the differing lines are "
                         "shown removed and added")
        if self.cut_lines:
            lines = "line" if self.cut_lines == 1 else "lines"
            parts.append(f"{self.cut_lines:,} more diff {lines} not shown")
        if self.cut_chars:
            parts.append(f"only the first {MAX_DIFFED_CHARS:,} characters compared")
        return "; ".join(parts)

    def text(self) -> str:
        return "\n".join(self.lines)

    def first(self, max_lines: int) -> Diff:
        kept = self.lines[:max_lines]
        return Diff(lines=kept, cut_lines=self.cut_lines + len(self.lines) - len(kept),
                    cut_chars=self.cut_chars, replaced=self.replaced)


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


Opcode = tuple[str, int, int, int, int]
"""As difflib's: (`equal` | `replace` | `delete` | `insert`, i1, i2, j1, j2)."""


@dataclass
class _Work:
    """Steps a diff may take: the smaller of its own cap and what the rendering has left."""

    left: int
    spent: int = 0

    def take(self, steps: int) -> bool:
        self.spent += steps
        return self.spent <= self.left


def _common_ends(a: Sequence[int], b: Sequence[int]) -> tuple[int, int]:
    """Lengths of the common head and of the common tail (not overlapping)."""
    head = 0
    shortest = min(len(a), len(b))
    while head < shortest and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shortest - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _myers_trace(a: Sequence[int], b: Sequence[int], work: _Work) -> list[dict[int, int]] | None:
    """The furthest-reaching paths of Myers' greedy diff, one dict per edit count; None
    when the work runs out first."""
    n, m = len(a), len(b)
    v = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(n + m + 1):
        trace.append(dict(v))
        if not work.take(2 * d + 1):
            return None
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            start, y = x, x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            if not work.take(x - start):
                return None
            v[k] = x
            if x >= n and y >= m:
                return trace
    return trace


def _moves(trace: list[dict[int, int]], n: int, m: int) -> list[str]:
    """The edit script, forwards: `=` keep, `-` delete from a, `+` insert from b."""
    moves: list[str] = []
    x, y = n, m
    for d in range(len(trace) - 1, -1, -1):
        v, k = trace[d], x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            moves.append("=")
            x, y = x - 1, y - 1
        if d > 0:
            moves.append("+" if x == prev_x else "-")
        x, y = prev_x, prev_y
    moves.reverse()
    return moves


def _opcodes_of(moves: Sequence[str], i: int, j: int) -> list[Opcode]:
    """Runs of moves as opcodes, starting at (i, j); a deletion beside an insertion is a
    replacement."""
    codes: list[Opcode] = []
    index = 0
    while index < len(moves):
        end = index
        if moves[index] == "=":
            while end < len(moves) and moves[end] == "=":
                end += 1
            codes.append(("equal", i, i + end - index, j, j + end - index))
            i, j = i + end - index, j + end - index
        else:
            while end < len(moves) and moves[end] != "=":
                end += 1
            deleted = moves[index:end].count("-")
            inserted = end - index - deleted
            tag = "replace" if deleted and inserted else "delete" if deleted else "insert"
            codes.append((tag, i, i + deleted, j, j + inserted))
            i, j = i + deleted, j + inserted
        index = end
    return codes


def _opcodes(a: Sequence[int], b: Sequence[int], work: _Work) -> tuple[list[Opcode], bool]:
    """The opcodes turning `a` into `b`, and whether the middle was only shown replaced."""
    head, tail = _common_ends(a, b)
    middle_a, middle_b = a[head:len(a) - tail], b[head:len(b) - tail]
    trace = _myers_trace(middle_a, middle_b, work)
    replaced = trace is None
    if trace is None:
        moves = ["-"] * len(middle_a) + ["+"] * len(middle_b)
    else:
        moves = _moves(trace, len(middle_a), len(middle_b))
    codes = _opcodes_of(["="] * head + moves + ["="] * tail, 0, 0)
    return codes, replaced


def _grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """Hunks with `context` equal lines around each change (as difflib groups them)."""
    codes = list(codes)
    if codes and codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes and codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start if not length else start + 1},{length}"


def _unified(a: Sequence[str], b: Sequence[str], codes: list[Opcode],
             max_lines: int) -> tuple[list[str], int]:
    """The first `max_lines` lines of the unified diff (one line of context), and how
    many more there are."""
    lines: list[str] = []
    total = 0
    for group in _grouped(codes, 1):
        hunk = [f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@"]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                hunk.extend(" " + line for line in a[i1:i2])
                continue
            hunk.extend("-" + line for line in a[i1:i2])
            hunk.extend("+" + line for line in b[j1:j2])
        total += len(hunk)
        lines.extend(_clip(line) for line in hunk[:max(0, max_lines - len(lines))])
    return lines, total - len(lines)


def _numbered(a: list[str], b: list[str]) -> tuple[list[int], list[int]]:
    """Each distinct piece as a small integer, so comparing pieces is cheap."""
    ids: dict[str, int] = {}
    return ([ids.setdefault(p, len(ids)) for p in a], [ids.setdefault(p, len(ids)) for p in b])


_MEMO: dict[bytes, Diff] = {}


def _memo_key(base: str, head: str) -> bytes:
    digest = hashlib.blake2b(digest_size=20)
    for text in (base, head):
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.digest()


def _full_diff(base: str, head: str, budget: DiffBudget) -> Diff:
    """The diff of two (already cut) texts, up to `SUMMARY_DIFF_LINES` lines.

    A diff bounded only by its own size is the same in every view, so it is kept; one
    cut short by the rendering's budget is not."""
    key = _memo_key(base, head)
    known = _MEMO.get(key)
    if known is not None:
        return known
    a, b = _pieces(base), _pieces(head)
    work = _Work(min(MAX_DIFF_WORK, budget.steps_left))
    codes, replaced = _opcodes(*_numbered(a, b), work)
    budget.steps_left = max(0, budget.steps_left - work.spent)
    lines, more = _unified(a, b, codes, SUMMARY_DIFF_LINES)
    diff = Diff(lines=lines, cut_lines=more, replaced=replaced)
    if not replaced or work.left == MAX_DIFF_WORK:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = diff
    return diff


def text_diff(base: str, head: str, max_lines: int, budget: DiffBudget | None = None) -> Diff:
    """A unified diff of `base` → `head` (one line of context), at most `max_lines`.

    `budget` is the rendering's; without one the diff is bounded by its own cap only."""
    cut_chars = len(base) > MAX_DIFFED_CHARS or len(head) > MAX_DIFFED_CHARS
    full = _full_diff(base[:MAX_DIFFED_CHARS], head[:MAX_DIFFED_CHARS],
                      DiffBudget() if budget is None else budget)
    diff = full.first(max_lines)
    return Diff(lines=diff.lines, cut_lines=diff.cut_lines, cut_chars=cut_chars,
                replaced=diff.replaced)


def text_change(what: str, base: str, head: str, max_lines: int,
                budget: DiffBudget | None = None) -> Change:
    diff = None if is_short(base) and is_short(head) \
        else text_diff(base, head, max_lines, budget)
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
    simulator: str = ""
    """A simulated user's setup as text (`simulator_text`); empty without one."""


def sent_by_key(report: Report | None) -> dict[tuple[str, str], Sent]:
    """(suite path, eval name) → what the eval sent, for every eval of `report`."""
    if report is None:
        return {}
    return {(suite.path, e.name): sent(suite, e) for suite in report.suites for e in suite.evals}


def sent(suite: SuiteResult, result: EvalResult) -> Sent:
    return Sent(system_prompt=suite.system_prompt or "", tools=suite.tools_of(result),
                simulator=simulator_text(result))


def simulator_text(result: EvalResult) -> str:
    """The simulated user of `result` (model, settings, persona, goal …) as diffable
    lines; empty when it has none."""
    setup = result.simulator
    if setup is None:
        return ""
    fields = setup.model_dump(mode="json")
    opening = fields.pop("opening")
    lines = [f"{name}: {value}" for name, value in fields.items() if value is not None]
    return "\n".join([*lines, *(f"opening: {text}" for text in opening)])


def setup_changes(base: Sent | None, head: Sent | None, max_lines: int,
                  budget: DiffBudget | None = None) -> list[Change]:
    """The system prompt and the tools, where they differ between the two sides."""
    if base is None or head is None:
        return []
    changes = []
    if base.system_prompt != head.system_prompt:
        changes.append(text_change("system prompt", base.system_prompt, head.system_prompt,
                                   max_lines, budget))
    if base.tools != head.tools:
        changes.append(tools_change(base.tools, head.tools, max_lines, budget))
    if base.simulator != head.simulator:
        changes.append(Change(what="simulated user", base=base.simulator, head=head.simulator,
                              diff=text_diff(base.simulator, head.simulator, max_lines, budget)))
    return changes


def tools_change(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]],
                 max_lines: int, budget: DiffBudget | None = None) -> Change:
    """Which tools were added, removed or changed, and a diff of the changed ones'
    definitions (an added or removed tool is named, not shown)."""
    before = {_tool_name(t): t for t in base}
    after = {_tool_name(t): t for t in head}
    changed = [n for n in after if n in before and before[n] != after[n]]
    diff = text_diff(tools_text([before[n] for n in changed]),
                     tools_text([after[n] for n in changed]), max_lines, budget) \
        if changed else None
    return Change(what="tools", base=tools_text(base), head=tools_text(head), diff=diff,
                  summary=tools_summary(base, head), inline=False)
