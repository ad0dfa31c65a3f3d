"""Terminal output of a run: per-turn transcripts, progress and a summary table."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TextIO

from turncheck.engine.protocol_report import CaseResult, ProtocolSuiteResult
from turncheck.engine.report import CheckResult, EvalResult, Report, Status, SuiteResult, Usage
from turncheck.render.budget_text import budget_lines
from turncheck.render.tool_calls import call_text
from turncheck.text.money import usd

MAX_SHOWN_CHARS = 1000
STATUS_LABEL = {Status.PASS: "✅ PASS", Status.FAIL: "❌ FAIL", Status.ERROR: "💥 ERROR",
                Status.SKIPPED: "⏭️ SKIPPED"}


# Control characters (newline and tab excepted) and lone surrogates: model output and
# file content must not move the cursor, clear the screen or crash the encoder.
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` with control characters shown as `\\xNN` escapes (line breaks kept)."""
    return _NOT_PRINTABLE.sub(_escaped, text.replace("\r\n", "\n"))


def _shown(text: str, indent: str) -> str:
    clipped = (
        text
        if len(text) <= MAX_SHOWN_CHARS
        else (text[:MAX_SHOWN_CHARS] + f" … ({len(text) - MAX_SHOWN_CHARS} more characters)")
    )
    return clipped.strip().replace("\n", "\n" + indent)


def _check_line(check: CheckResult) -> str:
    mark = "✅ PASS" if check.passed else "❌ FAIL"
    if check.error:
        mark = "💥 ERROR"
    suffix = f" — {check.error}" if check.error else ""
    return "  " * check.depth + f"{mark} {check.detail}{suffix}"


def overall(result: EvalResult) -> str:
    repeats = result.repeats
    if repeats is not None:
        shown = _single(result)
        flaky = ", flaky" if repeats.flaky else ""
        return f"{shown} · {repeats.passes}/{repeats.samples} samples passed{flaky}"
    return _single(result)


def _single(result: EvalResult) -> str:
    if result.status is Status.PASS:
        return f"✅ PASS (succeeded on turn {result.passed_on_turn})"
    if result.status is Status.FAIL:
        return f"❌ FAIL (after {len(result.turns)} turn{'s' if len(result.turns) != 1 else ''})"
    if result.status is Status.SKIPPED:
        return f"⏭️ SKIPPED ({result.reason}: a live call could have crossed the budget)"
    return f"💥 ERROR: {result.error}"


def eval_lines(index: int, result: EvalResult) -> Iterable[str]:
    yield f"Eval {index}: {result.name}"
    for turn in result.turns:
        yield f"  Turn {turn.turn}:"
        yield f"    Prompt: {_shown(turn.prompt, '            ')}"
        for call in turn.tool_calls:
            yield f"    Tool call {_shown(call_text(call), '      ')}"
        yield f"    Response: {_shown(turn.response, '              ')}"
        for check in turn.checks:
            yield f"    {_check_line(check)}"
    yield f"  Overall: {overall(result)}"


def suite_header(suite: SuiteResult, mode: str) -> str:
    return f"== {suite.path} — {suite.name} ({suite.model} via {suite.provider}, {mode})"


def transcript(report: Report, out: TextIO) -> None:
    for suite in report.suites:
        print(terminal_safe(suite_header(suite, report.mode)), file=out)
        for index, result in enumerate(suite.evals, 1):
            for line in eval_lines(index, result):
                print(terminal_safe(line), file=out)
        print(file=out)


def _tokens(usage: Usage) -> str:
    return f"{usage.input_tokens:,}/{usage.output_tokens:,}"


def _judge_cost(usage: Usage, cost: float | None) -> str:
    return "—" if usage.total == 0 and cost == 0 else usd(cost)


def summary_rows(report: Report) -> list[list[str]]:
    rows = [
        [
            "Suite",
            "Evals",
            "Pass",
            "Fail",
            "Error",
            "Tokens in/out",
            "Cost",
            "Judge tokens",
            "Judge cost",
        ]
    ]
    for suite in report.suites:
        statuses = [e.status for e in suite.evals]
        rows.append(
            [
                suite.name,
                str(len(statuses)),
                str(statuses.count(Status.PASS)),
                str(statuses.count(Status.FAIL)),
                str(statuses.count(Status.ERROR)),
                _tokens(suite.usage),
                usd(suite.cost_usd),
                _tokens(suite.judge_usage),
                _judge_cost(suite.judge_usage, suite.judge_cost_usd),
            ]
        )
    t = report.totals
    rows.append(
        [
            "Total",
            str(t.evals),
            str(t.passed),
            str(t.failed),
            str(t.errors),
            _tokens(t.usage),
            usd(t.cost_usd),
            _tokens(t.judge_usage),
            _judge_cost(t.judge_usage, t.judge_cost_usd),
        ]
    )
    return rows


def table(rows: list[list[str]], *, total: bool = True) -> list[str]:
    """Aligned columns with a rule under the header and, when the last row is a `total`,
    one above it."""
    rows = [[terminal_safe(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    rule = "  ".join("-" * width for width in widths)
    body = [*lines[1:-1], rule, lines[-1]] if total else lines[1:]
    return [lines[0], rule, *body]


def summary(report: Report, out: TextIO) -> None:
    # A run of protocol suites only has no eval table (its own table comes before this).
    for line in table(summary_rows(report)) if report.suites or not report.protocols else []:
        print(line, file=out)
    source = report.price_source
    print(f"Prices: {source.library} {source.version} at {source.timestamp}", file=out)
    if report.totals.unpriced_models:
        unpriced = terminal_safe(", ".join(report.totals.unpriced_models))
        print(f"Unpriced (no known price): {unpriced}", file=out)
    for line in error_lines(report):
        print(line, file=out)
    for line in budget_lines(report):
        print(line, file=out)
    print(f"Ran in {report.duration_s:.2f}s ({report.mode} mode).", file=out)


MAX_ERRORS_LISTED = 20


def error_lines(report: Report) -> list[str]:
    """Why evals errored, so the reason shows even with --quiet."""
    errored = [(s, e) for s in report.suites for e in s.evals if e.status is Status.ERROR]
    lines = [terminal_safe(f"  💥 {s.name} › {e.name}: {e.error}").replace("\n", " ")
             for s, e in errored[:MAX_ERRORS_LISTED]]
    if len(errored) > MAX_ERRORS_LISTED:
        lines.append(f"  … and {len(errored) - MAX_ERRORS_LISTED} more")
    return ["Errors:", *lines] if lines else []


class Progress:
    """A live counter on a terminal; one plain line per finished eval otherwise."""

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        # Looked up per instance: the CLI imports this module lazily, whatever
        # `sys.stderr` was at that moment (a test's capture) may be closed since.
        self.out = sys.stderr if out is None else out
        self.live = self.out.isatty()

    def advance(self, suite: SuiteResult, result: EvalResult) -> None:
        self.tick(f"{result.status.value:<5} {suite.name} › {result.name}")

    def advance_case(self, suite: ProtocolSuiteResult, case: CaseResult) -> None:
        """A protocol suite's case finished."""
        self.tick(f"{case.status.value:<5} {suite.name} › {case.id}")

    def tick(self, text: str) -> None:
        self.done += 1
        # One line whatever the names hold: a name must not start a workflow command.
        label = terminal_safe(f"[{self.done}/{self.total}] {text}").replace("\n", " ")
        if self.live:
            print(f"\r\033[K{label[:120]}", end="", file=self.out, flush=True)
        else:
            print(label, file=self.out, flush=True)

    def finish(self) -> None:
        if self.live and self.done:
            print("\r\033[K", end="", file=self.out, flush=True)
