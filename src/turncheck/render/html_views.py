"""The HTML report's view models: what the template (`templates/report.html.j2`) shows of
a run or a comparison, built by `html_rows` (rows), `html_turns` (conversations) and
`html_report` (the page)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from turncheck.render.app_calls import APP_CALLS_NOTE
from turncheck.render.latency import LatencyRow
from turncheck.render.severity import ORDER


@dataclass(frozen=True)
class CheckView:
    passed: bool | None
    """None: could not be evaluated (or a score without a pass/fail)."""
    text: str
    depth: int = 0


@dataclass(frozen=True)
class EndingView:
    """How a simulated user's conversation ended on one side, and its `success` checks."""

    side: str
    text: str
    checks: list[CheckView]


@dataclass(frozen=True)
class TurnView:
    number: int
    prompt: str
    response: str
    checks: list[CheckView]
    passed: bool | None
    tokens: str
    cost: str
    latency: str
    app_calls: str = ""
    """An app target's turn: how many model calls the app made (its tokens and cost)."""
    first_token: str = ""
    """An app target's turn: the time to the first byte of its reply, when measured."""


@dataclass(frozen=True)
class AppSuiteView:
    """An app-target suite's own model calls, apart from turncheck's (the judge's)."""

    name: str
    path: str
    calls: str
    """`8 → 5 (1.6 → 1 per turn)`, or one run's `8 in 5 turns (1.6 per turn)`."""
    app_tokens: str
    app_cost: str
    own_tokens: str
    own_cost: str


@dataclass(frozen=True)
class DiffLineView:
    kind: str
    """`add`, `del`, `hunk` or `ctx`: a CSS class, never a value from the report."""
    text: str


@dataclass(frozen=True)
class ChangeView:
    """Something the two sides sent differently: a prompt, the system prompt, the tools."""

    title: str
    summary: str
    base: str
    head: str
    lines: list[DiffLineView]
    """The diff; empty when both texts are short enough to read side by side."""
    note: str = ""
    folded: bool = False
    """Both texts in full behind a click (they are long, or the diff says it)."""


@dataclass(frozen=True)
class TurnPair:
    number: int
    base: TurnView | None
    head: TurnView | None
    base_gap: str = ""
    """Why the base has no such turn, when it has none."""
    head_gap: str = ""
    prompt_changed: bool = False
    prompt_diff: ChangeView | None = None
    """Set for a long changed prompt."""


@dataclass(frozen=True)
class SampleView:
    label: str
    status: str
    turns: list[TurnView]


@dataclass
class RowView:
    """One eval, protocol case or calibration sample, both sides."""

    key: str
    suite: str
    """The suite's file path."""
    name: str
    verdict: str
    status: str
    """Head status (base status for a removed row)."""
    transition: str
    facts: list[str] = field(default_factory=list)
    """Short figures for the row's line: pass rate, p-value, tokens, cost."""
    pairs: list[TurnPair] = field(default_factory=list)
    base_samples: list[SampleView] = field(default_factory=list)
    head_samples: list[SampleView] = field(default_factory=list)
    error: str | None = None
    why: str = ""
    """Why the row has its verdict (the comparison's reason), when known."""
    has_base: bool = False
    has_head: bool = False
    changes: list[ChangeView] = field(default_factory=list)
    """The system prompt and tools, where base and head differ."""
    suite_name: str = ""
    """The suite's declared name (`metadata.name`), shown and searched beside its path."""
    rank: int = len(ORDER)
    """Where the row's severity group stands in `severity.ORDER` (most severe first)."""
    endings: list[EndingView] = field(default_factory=list)
    """A simulated user's eval: how each side's conversation ended."""


@dataclass
class SectionView:
    kind: str
    title: str
    rows: list[RowView]
    note: str | None = None

    def options(self, attribute: str) -> list[tuple[str, int]]:
        """Each value of `attribute` (verdict, suite, status) with its number of rows."""
        counts = Counter(getattr(row, attribute) for row in self.rows)
        return sorted(counts.items())


@dataclass(frozen=True)
class BannerView:
    """The verdict the comment leads with (`render/headline.py`), atop the page."""

    icon: str
    text: str
    counts: str
    tone: str
    """`fail`, `warn` or `ok`: a CSS class, never a value from the report."""


@dataclass(frozen=True)
class AppChangeLine:
    line: str
    prompt: ChangeView | None = None


@dataclass(frozen=True)
class AppChangesView:
    """What an app suite's app sent or did differently at head."""

    name: str
    path: str
    changes: list[AppChangeLine]


@dataclass
class ReportView:
    title: str
    facts: list[str]
    sections: list[SectionView]
    diagnostics: list[str]
    """Validation errors: what could not run."""
    two_sided: bool
    """Base and head columns (else the one run's conversations alone)."""
    warnings: list[str] = field(default_factory=list)
    """Validation warnings: everything ran; shown apart, muted."""
    banner: BannerView | None = None
    replayed: frozenset[str] = frozenset()
    """The sides (`base`, `head`, `run`) answered from cassettes: their latencies are the
    recording's, not this run's, and are not shown."""
    app_suites: list[AppSuiteView] = field(default_factory=list)
    app_note: str = APP_CALLS_NOTE
    app_changes: list[AppChangesView] = field(default_factory=list)
    latency: list[LatencyRow] = field(default_factory=list)
    ran_because: list[tuple[str, str]] = field(default_factory=list)
    """(suite path, why) of each suite run only because a file it watches changed."""
