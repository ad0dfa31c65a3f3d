"""What a run is asked to do: mode, provider, limits, repeats (the command line's and the
action's settings), shared by every kind of case the engine runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from turncheck.choices import Mode
from turncheck.engine.pairing import SideOfPair
from turncheck.engine.repeats import RepeatSetting
from turncheck.engine.session import SessionSettings
from turncheck.formats.budget import BudgetLimits


@dataclass
class RunSettings:
    mode: Mode = "replay"
    concurrency: int = 8
    provider: str | None = None
    base_url: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    price_timestamp: str | None = None
    commit: str | None = None
    session: SessionSettings = field(default_factory=SessionSettings)
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    """Hard limits on the whole run's live calls (docs/budgets.md)."""
    repeat: RepeatSetting | None = None
    """Overrides every suite's `repeat` (the command line's `--repeat`)."""
    pairing: SideOfPair | None = None
    """This run is one side of a comparison whose other side runs at the same time:
    `repeat: auto` stops each eval on both sides' samples (`engine/pairing.py`)."""
