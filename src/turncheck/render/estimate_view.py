"""`turncheck estimate` output: a console table and the Markdown the action posts."""

from __future__ import annotations

from turncheck.render.display import Table
from turncheck.report.estimate import Estimate, Figures, SuiteEstimate
from turncheck.text.counts import counted
from turncheck.text.lines import terminal_safe
from turncheck.text.markdown import md_cell, md_text
from turncheck.text.money import usd


def _tokens(figures: Figures) -> str:
    return f"{figures.usage.input_tokens + figures.judge_usage.input_tokens:,}/" \
        f"{figures.usage.output_tokens + figures.judge_usage.output_tokens:,}"


def _notes(suite: SuiteEstimate) -> str:
    notes = []
    if suite.kind == "protocol":
        notes.append("protocol: rendered prompt sizes approximated")
    if suite.expected_source == "guess":
        notes.append("expected: guessed (no history)")
    elif suite.evals_from_history < suite.evals:
        notes.append(f"expected: {counted(suite.evals - suite.evals_from_history, 'eval')} guessed")
    if not suite.tokens_exact:
        notes.append("input tokens estimated (bound)")
    if suite.max_output_tokens_default:
        notes.append(f"no max_output_tokens: {suite.max_output_tokens} assumed")
    if suite.samples > 1:
        notes.append(f"× {suite.samples} repeats")
    return "; ".join(notes)


HEADER = ["Suite / sample file", "Evals / samples", "Expected tokens in/out", "Expected cost",
          "Worst-case tokens in/out", "Worst-case cost", "Notes"]


def rows(estimate: Estimate) -> list[list[str]]:
    body = [
        [s.name, str(s.evals), _tokens(s.expected), usd(s.expected.total_cost_usd),
         _tokens(s.worst), usd(s.worst.total_cost_usd), _notes(s)]
        for s in estimate.suites
    ]
    total = ["Total", str(sum(s.evals for s in estimate.suites)), _tokens(estimate.expected),
             usd(estimate.expected.total_cost_usd), _tokens(estimate.worst),
             usd(estimate.worst.total_cost_usd), ""]
    return [HEADER, *body, total]


def footer_lines(estimate: Estimate) -> list[str]:
    source = estimate.price_source
    lines = [f"Prices: {source.library} {source.version} at {source.timestamp}"]
    lines.append(f"Expected from: {estimate.history}" if estimate.history else
                 "Expected: guessed (every eval passes on its first turn); "
                 "give --history REPORT.json for figures from a previous run")
    lines.append("Worst case: every follow-up fires, every answer is max_output_tokens long, "
                 "every judge and embedding call runs (docs/budgets.md)")
    if estimate.unpriced_models:
        lines.append(f"Unpriced (no known price): {', '.join(estimate.unpriced_models)}")
    if estimate.not_estimated:
        lines.append(f"Not estimated: {', '.join(estimate.not_estimated)}")
    return lines


def console_lines(estimate: Estimate) -> list[str]:
    header, *body, total = rows(estimate)
    table = Table(header, body, total).lines()
    return [terminal_safe(line) for line in [*table, *footer_lines(estimate)]]


def _cell(text: str) -> str:
    return md_cell(text, 200)


def estimate_markdown(estimate: Estimate, marker: str) -> str:
    """The PR comment of `mode: estimate`: the same table, in Markdown."""
    lines = [marker, "## 💰 turncheck: estimate of a live run", ""]
    if not estimate.suites:
        lines += ["No eval suite changed in this pull request.", ""]
    else:
        header, *body = rows(estimate)
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|---|---:|---:|---:|---:|---:|---|")
        for row in body:
            lines.append("| " + " | ".join(_cell(cell) for cell in row) + " |")
        lines.append("")
    lines += [f"- {md_text(line, 1000)}" for line in footer_lines(estimate)]
    return "\n".join(lines) + "\n"
