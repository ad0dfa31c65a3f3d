"""Why an eval's cost changed, as far as the report can see it ("Where the change comes
from" in the comment): what the app sent (its system prompt, the tools it offered), the
simulated user, and longer or shorter answers."""

from __future__ import annotations

from turncheck.compare.app_changes import tools_change
from turncheck.report.comparison import EvalSide


def cost_causes(base: EvalSide, head: EvalSide) -> list[str]:
    """The causes seen besides turns, app model calls and the judge (said elsewhere)."""
    causes = []
    if base.app_prompts and head.app_prompts and base.app_prompts != head.app_prompts:
        more = _signed(head.input_tokens - base.input_tokens)
        causes.append(f"the app's system prompt changed ({more} input tokens)")
    tools = tools_change(base.app_tools, head.app_tools)
    if tools:
        causes.append(f"tools offered: {tools}")
    if head.simulator_tokens != base.simulator_tokens:
        causes.append(f"the simulated user: {base.simulator_tokens:,} → "
                      f"{head.simulator_tokens:,} tokens")
    return causes


def answers_change(base: EvalSide, head: EvalSide) -> str:
    """When nothing else explains it: the answers, by their output tokens."""
    more = head.output_tokens - base.output_tokens
    if more and head.input_tokens == base.input_tokens:
        longer = "longer" if more > 0 else "shorter"
        return f"{longer} answers ({_signed(more)} output tokens)"
    return "longer or shorter answers"


def _signed(number: int) -> str:
    return f"+{number:,}" if number >= 0 else f"−{-number:,}"
