"""What an app target sent or did differently at head (docs/targets.md, "What the app
sent"): for each eval run on both sides, turn by turn on the turns both sides ran, the
app's model calls per turn, the model, the system prompt, the tools offered, the tool
calls the model asked for (in order) and the tokens. One change made in many evals is one
entry: what changed, before → after, and the evals and turns it was seen on.

Decisions:
- A turn's system prompt is the distinct system prompts of its calls, in the order first
  sent; its tools the union of the tools its calls offered; its tool calls all of them in
  order. A repeated eval is compared on its first sample's conversation.
- Tokens differ on nearly every turn of a live run: they are one entry per suite, the
  mean per turn on each side, not one per eval.
- Bounded: each system prompt is kept up to `MAX_APP_PROMPT_CHARS`, a suite keeps at
  most `MAX_APP_CHANGES` entries (the most widespread) and names `NAMED_APP_EVALS` evals
  per entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from turncheck.report.comparison import AppChange
from turncheck.report.results import TurnResult
from turncheck.report.run import EvalResult

MAX_APP_PROMPT_CHARS = 20_000
MAX_APP_CHANGES = 24
NAMED_APP_EVALS = 5

CALLS = "model calls per turn"
MODEL = "model"
SYSTEM_PROMPT = "system prompt"
TOOLS = "tools offered"
TOOL_CALLS = "tool calls"
TOKENS = "tokens per turn"
ORDER = (CALLS, MODEL, SYSTEM_PROMPT, TOOLS, TOOL_CALLS, TOKENS)
"""The order changes are listed in: what the app does before what it says."""
NONE = "none"


@dataclass(frozen=True)
class TurnSent:
    """What the app sent and did on one turn."""

    calls: int
    models: str
    system: str
    tools: Mapping[str, str]
    """Name → schema SHA-256."""
    tool_calls: str
    tokens: int


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def turn_sent(turn: TurnResult) -> TurnSent | None:
    """None for a turn that was not with an app."""
    if turn.app_model_calls is None:
        return None
    calls = turn.app_calls
    tools: dict[str, str] = {}
    for call in calls:
        tools.update((tool.name, tool.schema_sha256) for tool in call.tools)
    systems = _distinct((call.system or "")[:MAX_APP_PROMPT_CHARS] for call in calls
                        if call.system)
    return TurnSent(
        calls=turn.app_model_calls,
        models=", ".join(_distinct(call.model for call in calls if call.model)) or NONE,
        system="\n\n".join(systems), tools=tools,
        tool_calls=", ".join(asked.name for call in calls for asked in call.tool_calls) or NONE,
        tokens=turn.usage.input_tokens + turn.usage.output_tokens,
    )


def tools_change(base: Mapping[str, str], head: Mapping[str, str]) -> str:
    """`+refund_status, −issue_refund, lookup_order's schema changed`; empty when the
    same."""
    if base == head:
        return ""
    added = [f"+{name}" for name in head if name not in base]
    removed = [f"−{name}" for name in base if name not in head]
    changed = [f"{name}'s schema changed" for name in head
               if name in base and base[name] != head[name]]
    return ", ".join([*added, *removed, *changed])


@dataclass
class _Seen:
    change: AppChange
    evals: dict[str, None] = field(default_factory=dict)


@dataclass
class _Tokens:
    base: int = 0
    head: int = 0
    turns: int = 0
    evals: dict[str, None] = field(default_factory=dict)


@dataclass
class AppChanges:
    """The changes of one suite, gathered eval by eval."""

    seen: dict[tuple[str, str, str], _Seen] = field(default_factory=dict)
    tokens: _Tokens = field(default_factory=_Tokens)

    def add_eval(self, name: str, base: Sequence[TurnResult], head: Sequence[TurnResult]
                 ) -> None:
        for before_turn, after_turn in zip(base, head, strict=False):
            before, after = turn_sent(before_turn), turn_sent(after_turn)
            if before is not None and after is not None:
                self._add_turn(name, before, after)

    def _add_turn(self, name: str, before: TurnSent, after: TurnSent) -> None:
        self._add(CALLS, str(before.calls), str(after.calls), name)
        self._add(MODEL, before.models, after.models, name)
        self._add(SYSTEM_PROMPT, before.system, after.system, name)
        self._add(TOOLS, ", ".join(before.tools) or NONE, ", ".join(after.tools) or NONE,
                  name, tools_change(before.tools, after.tools))
        self._add(TOOL_CALLS, before.tool_calls, after.tool_calls, name)
        self.tokens.base += before.tokens
        self.tokens.head += after.tokens
        self.tokens.turns += 1
        if before.tokens != after.tokens:
            self.tokens.evals[name] = None

    def _add(self, what: str, before: str, after: str, name: str, summary: str = "") -> None:
        if before == after and not summary:
            return
        seen = self.seen.setdefault((what, before, after), _Seen(AppChange(
            what=what, before=before, after=after, summary=summary)))
        seen.evals[name] = None
        seen.change.turns += 1

    def changes(self) -> list[AppChange]:
        found = [_named(seen.change, seen.evals) for seen in self.seen.values()]
        tokens = self._tokens()
        if tokens is not None:
            found.append(tokens)
        found.sort(key=lambda change: (ORDER.index(change.what), -change.turns))
        return found[:MAX_APP_CHANGES]

    def _tokens(self) -> AppChange | None:
        counted = self.tokens
        if not counted.turns or not counted.evals:
            return None
        before, after = counted.base / counted.turns, counted.head / counted.turns
        if round(before) == round(after):
            return None
        return _named(AppChange(what=TOKENS, before=f"{before:,.0f}", after=f"{after:,.0f}",
                                turns=counted.turns), counted.evals)


def _named(change: AppChange, evals: Mapping[str, None]) -> AppChange:
    names = list(evals)
    return change.model_copy(update={"evals": names[:NAMED_APP_EVALS],
                                     "eval_count": len(names)})


def app_changes(pairs: Iterable[tuple[EvalResult | None, EvalResult | None]]
                ) -> list[AppChange]:
    """What the app did differently in the evals run on both sides of one suite."""
    gathered = AppChanges()
    for base, head in pairs:
        if base is not None and head is not None:
            gathered.add_eval(head.name, base.turns, head.turns)
    return gathered.changes()
