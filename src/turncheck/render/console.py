"""Terminal output of a run: per-turn transcripts, progress and a summary table."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TextIO

from turncheck.choices import provider_spec
from turncheck.render.app_calls import run_app_calls_lines
from turncheck.render.budget_text import budget_lines
from turncheck.render.columns import (
    Column,
    Tally,
    column_table,
    simulator_spend_columns,
    summary_columns,
    tally_spent,
)
from turncheck.render.display import (
    STATUS_LABEL,
    Table,
    check_status,
    console_heading,
    exchange_lines,
    pass_k_text,
    print_lines,
    samples_text,
)
from turncheck.render.tool_calls import call_text
from turncheck.report.protocol import CaseResult, ProtocolSuiteResult
from turncheck.report.results import CheckResult, ConversationEnd, Ending, Status, StatusReason
from turncheck.report.run import EvalResult, Report, SuiteResult
from turncheck.text.counts import counted
from turncheck.text.lines import one_line, terminal_safe

__all__ = ["Progress", "eval_lines", "overall", "print_failing", "summary", "transcript"]

def _check_line(check: CheckResult) -> str:
    mark = STATUS_LABEL[check_status(check)]
    suffix = f" — {check.error}" if check.error else ""
    return "  " * check.depth + f"{mark} {check.detail}{suffix}"


def overall(result: EvalResult) -> str:
    repeats = result.repeats
    if repeats is not None:
        text = f"{_single(result)} · {samples_text(repeats.passes, repeats.samples, repeats.flaky)}"
        pass_k = pass_k_text(repeats.pass_hat_k, repeats.pass_at_k)
        return f"{text} · {pass_k}" if pass_k else text
    return _single(result)


def _single(result: EvalResult) -> str:
    if result.status is Status.PASS:
        return f"{STATUS_LABEL[result.status]} (succeeded on turn {result.passed_on_turn})"
    if result.status is Status.FAIL:
        return f"{STATUS_LABEL[result.status]} ({failed_text(result)})"
    if result.status is Status.SKIPPED:
        return (f"{STATUS_LABEL[result.status]} ({result.reason}: a live call could have "
                "crossed the budget)")
    if result.reason == StatusReason.SIMULATOR:
        return f"{STATUS_LABEL[Status.ERROR]} (unusable sample, the simulator's): {result.error}"
    return f"{STATUS_LABEL[Status.ERROR]}: {result.error}"


def failed_text(result: EvalResult) -> str:
    """How a failed eval failed: `failed on turn 2 of 3` (scripted turns), else
    `after 2 turns`."""
    turns = len(result.turns)
    if result.failed_on_turn is not None:
        return f"failed on turn {result.failed_on_turn} of {turns}"
    return f"after {turns} turn{'s' if turns != 1 else ''}"


def eval_lines(index: int, result: EvalResult) -> Iterable[str]:
    yield f"Eval {index}: {result.name}"
    for turn in result.turns:
        yield f"  Turn {turn.turn}:"
        yield from exchange_lines(turn.prompt, turn.response,
                                  [call_text(call) for call in turn.tool_calls])
        for check in turn.checks:
            yield f"    {_check_line(check)}"
    if result.conversation is not None:
        yield from conversation_lines(result.conversation)
    yield f"  Overall: {overall(result)}"


def conversation_lines(end: ConversationEnd) -> Iterable[str]:
    """How a simulated user's conversation ended, and its success checks and review."""
    detail = f" — {end.detail}" if end.detail else ""
    yield f"  Ended: {ending_text(end.ending)} after {counted(end.turns, 'turn')}{detail}"
    if end.success:
        yield "  Success (the whole conversation):"
        yield from (f"    {_check_line(check)}" for check in end.success)
    if end.review is not None:
        yield f"    {_check_line(end.review)}"


def ending_text(ending: Ending) -> str:
    return ENDING_TEXT[ending]


ENDING_TEXT = {
    Ending.GOAL_MET: "goal met", Ending.GAVE_UP: "the simulated user gave up",
    Ending.MAX_TURNS: "max_turns reached", Ending.MIN_TURNS_NOT_REACHED:
    "stopped before min_turns (unusable)", Ending.TARGET_ERROR: "target error",
    Ending.SIMULATOR_ERROR: "simulator error (unusable)",
}


def suite_header(suite: SuiteResult, mode: str) -> str:
    return console_heading(suite.path, suite.name, f"{suite.model} via {suite.provider}", mode)


def transcript(report: Report, out: TextIO) -> None:
    first_with: dict[str, str] = {}  # error text → the eval that showed it first
    for suite in report.suites:
        print_lines([suite_header(suite, report.mode)], out)
        for index, result in enumerate(suite.evals, 1):
            lines = list(eval_lines(index, result))
            if result.status is Status.ERROR and result.error:
                if result.error in first_with:  # one bad key: said once, not per eval
                    lines[-1] = f"  Overall: 💥 ERROR: the same as {first_with[result.error]}"
                else:
                    first_with[result.error] = f"{suite.name} › {result.name}"
            print_lines(lines, out)
        print(file=out)


SUMMARY_COLUMNS: list[Column[Tally[None]]] = summary_columns("Suite", "Evals")
SIMULATED_COLUMNS: list[Column[Tally[None]]] = [
    *SUMMARY_COLUMNS, *simulator_spend_columns(tally_spent)]
"""With simulated users: their simulator's tokens and cost, apart from the model's."""


def summary_table(report: Report) -> Table:
    rows = [Tally(suite.name, suite.rows(), suite, None) for suite in report.suites]
    total = Tally("Total", [row for suite in report.suites for row in suite.rows()],
                  report.totals, None)
    simulated = report.totals.simulator_usage.total > 0
    return column_table(SIMULATED_COLUMNS if simulated else SUMMARY_COLUMNS, rows, total)


def summary(report: Report, out: TextIO) -> None:
    # A run without eval suites (protocols, sample files only) has no eval table.
    for line in summary_table(report).lines() if report.suites else []:
        print(line, file=out)
    source = report.price_source
    print(f"Prices: {source.library} {source.version} at {source.timestamp}", file=out)
    if report.totals.unpriced_models:
        unpriced = terminal_safe(", ".join(report.totals.unpriced_models))
        print(f"Unpriced (no known price): {unpriced}", file=out)
    for line in [*run_app_calls_lines(report.suites, report.mode), *error_lines(report)]:
        print(line, file=out)
    for line in budget_lines(report):
        print(line, file=out)


MAX_ERRORS_LISTED = 20


def error_lines(report: Report) -> list[str]:
    """Why evals errored, so the reason shows even with --quiet: each distinct error once
    (a bad API key fails every eval alike), with the key to check on a 401 or 403."""
    by_error: dict[str, list[tuple[SuiteResult, EvalResult]]] = {}
    for suite in report.suites:
        for result in suite.evals:
            if result.status is Status.ERROR:
                by_error.setdefault(result.error or "", []).append((suite, result))
    lines = []
    for error, evals in list(by_error.items())[:MAX_ERRORS_LISTED]:
        suite, result = evals[0]
        who = f"{suite.name} › {result.name}"
        if len(evals) > 1:
            who = f"{len(evals)} evals ({who} and {len(evals) - 1} more)"
        text = f"  💥 {who}: {error}{key_hint(error, suite.provider)}"
        lines.append(terminal_safe(text).replace("\n", " "))
    if len(by_error) > MAX_ERRORS_LISTED:
        lines.append(f"  … and {len(by_error) - MAX_ERRORS_LISTED} more")
    return ["Errors:", *lines] if lines else []


_REFUSED = re.compile(r"\bHTTP (401|403)\b")


def key_hint(error: str, provider: str) -> str:
    """For a provider's 401/403: which environment variable holds the key it refused."""
    refused = _REFUSED.search(error)
    if refused is None:
        return ""
    spec = provider_spec(provider)
    if spec is None:
        return ""
    variable = spec.key_env
    problem = "missing or wrong" if refused.group(1) == "401" else "not allowed this call"
    return f" — check {variable}: the {provider} API key is {problem}"


class Progress:
    """A live counter on a terminal; one plain line per finished eval otherwise."""

    def __init__(self, total: int, out: TextIO | None = None, quiet: bool = False) -> None:
        self.total = total
        self.done = 0
        self.quiet = quiet
        """`--quiet`: count, print nothing."""
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
        if self.quiet:
            return
        # One line whatever the names hold: a name must not start a workflow command.
        label = terminal_safe(f"[{self.done}/{self.total}] {text}").replace("\n", " ")
        if self.live:
            print(f"\r\033[K{label[:120]}", end="", file=self.out, flush=True)
        else:
            print(label, file=self.out, flush=True)

    def finish(self) -> None:
        if self.live and self.done:
            print("\r\033[K", end="", file=self.out, flush=True)


MAX_FAILING_LISTED = 50


def failing_lines(report: Report) -> list[str]:
    """`Failed:` and one line per failed eval or protocol case (errors have their own
    list in the summary), at most `MAX_FAILING_LISTED`."""
    fail_label = STATUS_LABEL[Status.FAIL]
    failed = [f"{suite.name} › {result.name} ({suite.path}:{result.line}): failed "
              + overall(result).removeprefix(f"{fail_label} (").removeprefix("failed ")
              .replace(")", "", 1)
              for suite in report.suites for result in suite.evals
              if result.status is Status.FAIL]
    failed += [f"{suite.name} › {case.id} ({suite.path}): failed"
               for suite in report.protocols for case in suite.cases
               if case.status is Status.FAIL]
    if not failed:
        return []
    more = len(failed) - MAX_FAILING_LISTED
    shown = [f"  ❌ {one_line(text)}" for text in failed[:MAX_FAILING_LISTED]]
    return ["Failed:", *shown, *([f"  … and {more} more"] if more > 0 else [])]


def print_failing(report: Report, out: TextIO) -> None:
    print_lines(failing_lines(report), out)
