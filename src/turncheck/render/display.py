"""The display pieces the console and the comment share for every kind — evals, protocol
cases and calibration samples: a status's icon, a suite's heading, a row's repeat count,
a prompt's display, tables of rows (capped, aligned) and money base → head.

Each renderer maps its kind into these and prints or templates the result, so a fix to
how a heading, a repeat, a status or a money figure reads is made here once. Imports
stay light: `turncheck run` prints through this module without loading comparisons.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TextIO, TypeVar

from turncheck.report.results import CheckResult, Status
from turncheck.text.lines import terminal_safe
from turncheck.text.money import MoneyRow, percent_change, signed_int, usd

if TYPE_CHECKING:  # comparisons load scipy.stats
    from turncheck.report.spend import Spend

DASH = "—"
"""A cell with nothing to show (no base, no score, a removed row)."""
MAX_SHOWN_CHARS = 1000
"""Prompts and responses on the terminal are clipped here."""

STATUS_ICON = {Status.PASS: "✅", Status.FAIL: "❌", Status.ERROR: "💥", Status.SKIPPED: "⏭️"}
STATUS_LABEL = {status: f"{icon} {status.value.upper()}" for status, icon in STATUS_ICON.items()}
"""`✅ PASS`, `❌ FAIL`, `💥 ERROR`, `⏭️ SKIPPED`: a row's status on the terminal."""


def check_status(check: CheckResult) -> Status:
    """A check's outcome as a status: errored, else passed or failed."""
    return Status.ERROR if check.error else Status.PASS if check.passed else Status.FAIL


def or_dash(value: object | None, text: Callable[[object], str] = str) -> str:
    """`text(value)`, or `—` for None."""
    return DASH if value is None else text(value)


# -- headings --------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """How one kind names its suites in headings."""

    noun: str
    """`suite`, `protocol suite`."""
    icon: str
    """The icon of a suite that exists on both sides."""
    changed: str
    """The label of a suite that exists on both sides."""


EVAL_SUITE = Kind("suite", "📝", "changed suite")
PROTOCOL_SUITE = Kind("protocol suite", "🧪", "protocol suite")


@dataclass(frozen=True)
class Heading:
    icon: str
    label: str


def suite_heading(kind: Kind, state: str) -> Heading:
    """The icon and label of a suite in `state` (new, removed, changed, renamed)."""
    if state == "new":
        return Heading("🆕", f"new {kind.noun}")
    if state == "removed":
        return Heading("🗑️", f"removed {kind.noun}")
    if state == "renamed":
        return Heading(kind.icon, f"renamed {kind.noun}")
    return Heading(kind.icon, kind.changed)


def console_heading(path: str, title: str, *details: str) -> str:
    """`== evals/a.eval.yaml — support (gpt-4o via openai, replay)`: a suite's or a sample
    file's first line on the terminal, for every kind."""
    return f"== {path} — {title}" + (f" ({', '.join(details)})" if details else "")


def state_note(state: str) -> str:
    """` (new)`, ` (removed)` after a name that keeps its row in a table of its kind."""
    return f" ({state})" if state in ("new", "removed") else ""


# -- rows ------------------------------------------------------------------------------


def samples_text(passes: int, samples: int, flaky: bool, verb: str = "passed") -> str:
    """`3/5 samples passed, flaky`: a repeated row's samples, for every kind alike."""
    return f"{passes}/{samples} samples {verb}" + (", flaky" if flaky else "")


SHOWN_K = ("2", "4")
"""pass^k shown in text (k = 1 is the pass rate; tau2-bench reports pass^1..4); the
report's JSON has every k."""


def pass_k_text(pass_hat_k: Mapping[str, float], pass_at_k: Mapping[str, float] | None = None
                ) -> str:
    """`pass^2 0.30, pass^4 0.05 (pass@4 0.99)`: a repeated row's pass^k at the shown k it
    can estimate, and pass@k at the largest; empty when there is none."""
    ks = [k for k in SHOWN_K if k in pass_hat_k]
    if not ks:
        return ""
    text = ", ".join(f"pass^{k} {pass_hat_k[k]:.2f}" for k in ks)
    if pass_at_k and ks[-1] in pass_at_k:
        text += f" (pass@{ks[-1]} {pass_at_k[ks[-1]]:.2f})"
    return text


def shown(text: str, indent: str) -> str:
    """A prompt or response for the terminal: clipped, its lines under `indent`."""
    clipped = text if len(text) <= MAX_SHOWN_CHARS else (
        text[:MAX_SHOWN_CHARS] + f" … ({len(text) - MAX_SHOWN_CHARS} more characters)"
    )
    return clipped.strip().replace("\n", "\n" + indent)


def exchange_lines(prompt: str, response: str, calls: Sequence[str] = ()) -> list[str]:
    """One turn on the terminal, for every kind: its prompt, tool calls and response."""
    return [f"    Prompt: {shown(prompt, ' ' * 12)}",
            *(f"    Tool call {shown(call, ' ' * 6)}" for call in calls),
            f"    Response: {shown(response, ' ' * 14)}"]


def print_lines(lines: Iterable[str], out: TextIO) -> None:
    """`lines` on the terminal, each made terminal-safe."""
    for line in lines:
        print(terminal_safe(line), file=out)


def tokens_in_out(input_tokens: int, output_tokens: int) -> str:
    """`1,234/56`: input/output tokens."""
    return f"{input_tokens:,}/{output_tokens:,}"


Item = TypeVar("Item")


@dataclass(frozen=True)
class Capped(Generic[Item]):
    """The first `cap` items and how many more there are."""

    shown: list[Item]
    hidden: int

    @staticmethod
    def of(items: Sequence[Item], cap: int) -> Capped[Item]:
        return Capped(list(items[:cap]), max(0, len(items) - cap))


# -- tables ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A header, rows and an optional total row: any kind's console table."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    total: Sequence[str] | None = None

    def lines(self, indent: str = "") -> list[str]:
        """Aligned columns (cells terminal-safe), a rule under the header and one above
        the total."""
        rows = [[terminal_safe(cell) for cell in row]
                for row in (self.header, *self.rows, *([self.total] if self.total else []))]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [indent + "  ".join(cell.ljust(width) for cell, width
                                    in zip(row, widths, strict=True)).rstrip()
                 for row in rows]
        rule = indent + "  ".join("-" * width for width in widths)
        body = [*lines[1:-1], rule, lines[-1]] if self.total else lines[1:]
        return [lines[0], rule, *body]


# -- money -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MoneyLine:
    """One line of a money table: a figure base → head."""

    label: str
    base: str
    head: str
    delta: str
    percent: str = ""

    def cells(self) -> dict[str, str]:
        return {"label": self.label, "base": self.base, "head": self.head,
                "delta": self.delta, "percent": self.percent}


TOKENS_LABEL = "Tokens (model + judge)"
SIMULATOR_LABEL = "Simulated user"
"""A simulated user's model: its cost and tokens, apart from the app's (docs/suites.md)."""
SIMULATOR_TOKENS_LABEL = "Tokens (simulated user)"


@dataclass(frozen=True)
class Money:
    """Base and head spend of one thing (a run, a suite): its money lines, one rule for
    every kind. A side that does not exist reads `—`."""

    base: Spend | None
    head: Spend | None
    has_base: bool

    def cost(self, label: str, pick: Callable[[Spend], float | None]) -> MoneyLine:
        base, head = self.base, self.head
        money = MoneyRow.of(None if base is None else pick(base),
                            None if head is None else pick(head),
                            self.has_base and base is not None)
        return MoneyLine(label, DASH if base is None else money.base,
                         DASH if head is None else money.head, money.delta, money.percent)

    def total(self, label: str = "**Total**") -> MoneyLine:
        return self.cost(label, lambda side: side.total_cost_usd)

    @property
    def judged(self) -> bool:
        return any(side is not None and bool(side.judge_cost_usd or side.judge_tokens)
                   for side in (self.base, self.head))

    @property
    def simulated(self) -> bool:
        """Some conversation had a simulated user, whose spend is shown apart."""
        return any(side is not None and bool(side.simulator_tokens or side.simulator_cost_usd)
                   for side in (self.base, self.head))

    def simulator_tokens(self) -> MoneyLine:
        return self._count(SIMULATOR_TOKENS_LABEL, lambda side: side.simulator_tokens)

    def tokens(self, label: str = TOKENS_LABEL) -> MoneyLine:
        """Model plus judge tokens."""
        return self._count(label, lambda side: side.tokens + side.judge_tokens)

    def _count(self, label: str, pick: Callable[[Spend], int]) -> MoneyLine:
        before = None if self.base is None else pick(self.base)
        after = None if self.head is None else pick(self.head)
        if (before is None and after is None) or not self.has_base:
            return MoneyLine(label, DASH, or_dash(after, lambda n: f"{n:,}"),
                             DASH if not self.has_base else "n/a",
                             DASH if not self.has_base else "n/a")
        # A missing side counts as zero, as in every spend delta (report/spend.py).
        return MoneyLine(label, DASH if before is None else f"{before:,}",
                         or_dash(after, lambda n: f"{n:,}"),
                         signed_int((after or 0) - (before or 0)),
                         percent_change(before or 0, after or 0))

    def lines(self) -> list[MoneyLine]:
        """Model, judge (when there is one) and total cost — less the lines priced on
        neither side, which the note under the table explains — then tokens."""
        simulated = self.simulated
        costs = [self.cost("Model", lambda side: side.cost_usd),
                 *([self.cost("Judge", lambda side: side.judge_cost_usd)] if self.judged else []),
                 *([self.cost(SIMULATOR_LABEL, lambda side: side.simulator_cost_usd)]
                   if simulated else []),
                 self.total()]
        unpriced = usd(None)
        priced = [line for line in costs
                  if not (line.head == unpriced and line.base in (unpriced, DASH))]
        return [*priced, self.tokens(), *([self.simulator_tokens()] if simulated else [])]
