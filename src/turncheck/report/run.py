"""The versioned JSON run report: what a run produced, per suite, eval and turn.

This is the contract between `turncheck run`, `turncheck compare`, the action
and the fork-safe `workflow_run` poster, so it only grows compatibly; bump
`SCHEMA_VERSION` on any breaking change.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from turncheck.diagnostics import Diagnostic
from turncheck.report.calibration import CalibrationFileResult
from turncheck.report.model import ReportModel
from turncheck.report.protocol import ProtocolSuiteResult
from turncheck.report.results import (
    ConversationEnd,
    PromptTable,
    RepeatSummary,
    SampleResult,
    SharedPrompt,
    SimulatorSetup,
    Status,
    SuiteHeader,
    TurnResult,
)
from turncheck.report.rows import Row, RowKind, samples_of
from turncheck.report.spend import UsageAndCost

__all__ = ["EvalResult", "Report", "SuiteResult"]

RUN_KIND: Final = "run"
SCHEMA_VERSION = 1


class EvalResult(SharedPrompt, UsageAndCost):
    name: str
    prompt: str
    status: Status
    passed_on_turn: int | None
    error: str | None
    turns: list[TurnResult] = Field(default_factory=list)
    failed_on_turn: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """An eval of scripted `turns` that failed: the turn whose checks failed first (the
    later scripted turns were still sent)."""
    line: int = 1
    """Line of the eval's first `prompt` in the suite file, for annotations."""
    reason: str | None = None
    """Why the eval has its status when that is not its own outcome: `budget` (a
    `skipped` eval whose live call was not sent), `interrupted` (an `error`: the run was
    stopped before it finished); see `StatusReason`."""
    repeats: RepeatSummary | None = None
    """Set when the eval took more than one sample (or `repeat: auto`)."""
    samples: list[SampleResult] = Field(default_factory=list)
    """Every sample, when repeated; `turns` then shows the first sample's conversation."""
    tools: list[dict[str, Any]] | None = Field(default=None,
                                               exclude_if=lambda value: value is None)
    """The tool definitions this eval offered, as sent to the API, when they are not its
    suite's (the eval's own `tools`); None: the suite's `tools`."""
    prompt_chars: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """Set only when `prompt` is an excerpt: the first prompt's full length."""
    prompt_sha256: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """SHA-256 of the first prompt, when it is long: the report's `prompts` holds it."""
    simulator: SimulatorSetup | None = Field(default=None, exclude_if=lambda value: value is None)
    """A simulated user's eval: the simulator as it was (`prompt` is then its goal)."""
    conversation: ConversationEnd | None = Field(default=None,
                                                 exclude_if=lambda value: value is None)
    """A simulated user's eval: how its (first sample's) conversation ended."""


    def app_calls(self) -> tuple[int, int] | None:
        """The model calls an app target made in this eval's conversations (every
        sample's) and the turns they were made in; None when it talked to no app."""
        calls = turns = 0
        conversations = [sample.turns for sample in self.samples] or [self.turns]
        for turn in (turn for conversation in conversations for turn in conversation):
            if turn.app_model_calls is not None:
                calls += turn.app_model_calls
                turns += 1
        return (calls, turns) if turns else None

    def app_requests(self) -> tuple[list[str], dict[str, str]]:
        """What the app's model calls sent in this eval (every sample's): the SHA-256 of
        each system prompt, and the tools offered (name → schema SHA-256)."""
        prompts: set[str] = set()
        tools: dict[str, str] = {}
        conversations = [sample.turns for sample in self.samples] or [self.turns]
        for turn in (turn for conversation in conversations for turn in conversation):
            for call in turn.app_calls:
                if call.system_sha256:
                    prompts.add(call.system_sha256)
                tools.update((tool.name, tool.schema_sha256) for tool in call.tools)
        return sorted(prompts), tools

    def row(self, file: str) -> Row:
        passes, samples = samples_of(self.status, self.repeats)
        return Row(RowKind.EVAL, self.name, file, self.line, self.status, passes, samples,
                   self.spend)


class SuiteResult(SuiteHeader, UsageAndCost):
    evals: list[EvalResult] = Field(default_factory=list)
    # Left out when unset, so a suite without them reads as before they existed; a
    # report of an older turncheck reads as having neither.
    system_prompt: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The system prompt as sent (vars rendered, secrets as their tokens, redacted);
    None: none, or it could not be rendered (each eval's error says why)."""
    tools: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    """The tool definitions the suite's evals offer, as sent to the API."""

    def rows(self) -> list[Row]:
        return [result.row(self.path) for result in self.evals]

    def app_calls(self) -> tuple[int, int] | None:
        """The model calls an app target made in the suite and the turns they were made
        in; None when no conversation was with an app."""
        counted = [found for result in self.evals if (found := result.app_calls())]
        if not counted:
            return None
        return sum(calls for calls, _ in counted), sum(turns for _, turns in counted)

    def tools_of(self, result: EvalResult) -> list[dict[str, Any]]:
        """The tools `result` offered: its own, else the suite's."""
        return self.tools if result.tools is None else result.tools


class Totals(UsageAndCost):
    evals: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    unpriced_models: list[str] = Field(default_factory=list)


class PriceSource(ReportModel):
    library: str
    version: str
    timestamp: str
    """ISO-8601 UTC instant all prices of this run (and its comparison) were taken at."""


class BudgetOutcome(ReportModel):
    """One hard budget of a run (docs/budgets.md) and what was spent against it."""

    scope: str
    """`run` (command line / action inputs) or the suite path (its `budget:` block)."""
    max_cost_usd: float | None = None
    max_live_tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    refused_calls: int = 0
    """Live calls not sent because they could have crossed the budget."""

    @property
    def stopped(self) -> bool:
        return self.refused_calls > 0


class ShardInfo(ReportModel):
    index: int
    """1-based."""
    count: int
    plan: str
    """Digest of every eval of the full run and the shard count: shards of one plan merge."""


class Report(PromptTable):
    kind: Literal["run"] = RUN_KIND
    """Names the document (`report/files.py`); reports of older turncheck have none."""
    schema_version: int = SCHEMA_VERSION
    turncheck_version: str
    mode: str
    commit: str | None = None
    price_source: PriceSource
    suites: list[SuiteResult] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    started_at: str
    duration_s: float
    shard: ShardInfo | None = None
    live_tokens: int = 0
    """Tokens (model, judge, embeddings) this run sent to providers over the network."""
    calibrations: list[CalibrationFileResult] = Field(default_factory=list)
    """Sample files: how well each file's grader agrees with its labels."""
    protocols: list[ProtocolSuiteResult] = Field(default_factory=list)
    """Protocol suites: per case, per turn scores and aggregates."""
    budgets: list[BudgetOutcome] = Field(default_factory=list)
    """Hard budgets of this run; empty when none was set."""
    run_id: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """Names the run that sampled this report. Base and head sampled together (one
    two-commit run: `turncheck diff`, the action re-running the base) share it; two
    separate `turncheck run`s have different ones, and `compare` then allows for drift
    between the runs. None: a report of a turncheck from before it was recorded."""
    # `prompts` (written by `PromptTable`): each prompt longer than SHARED_PROMPT_CHARS,
    # once, keyed by its SHA-256; evals and turns name it in `prompt_sha256`.

    def rows(self) -> list[Row]:
        """Every eval, protocol case and graded sample file, in that order."""
        return [*(row for suite in self.suites for row in suite.rows()),
                *(row for suite in self.protocols for row in suite.rows()),
                *(result.row() for result in self.calibrations if result.graded)]

    @property
    def budget_stopped(self) -> bool:
        """Some live call was not sent because of a budget."""
        return any(budget.stopped for budget in self.budgets)
