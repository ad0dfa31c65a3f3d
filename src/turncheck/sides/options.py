"""What a user asks of a run — from the command line (`cli/`), the action's inputs
(`github/`) or the public API (`turncheck.run_suites`) — and the one place it becomes
the engine's `RunSettings`. Each caller passes the environment suites may read (the
process's, or the action's filtered copy): the engine reads no other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from turncheck.choices import Mode, provider_for
from turncheck.engine.repeats import RepeatSetting
from turncheck.engine.session import SessionSettings
from turncheck.engine.settings import RunSettings
from turncheck.formats.budget import BudgetLimits


@dataclass(frozen=True)
class RunOptions:
    mode: Mode = "replay"
    concurrency: int = 8
    """Evals running at once (per side when two commits run together)."""
    provider: str | None = None
    base_url: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    """What suites may read (`env(...)`, `secret(...)`, provider keys)."""
    price_timestamp: str | None = None
    """When prices are taken; None: the head commit's time, else now."""
    timeout_s: float = SessionSettings.timeout_s
    attempts: int = SessionSettings.attempts
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    repeat: RepeatSetting | None = None
    """Overrides every suite's `repeat`."""
    prune: bool = False
    """Recording drops the interactions no eval used (`record --prune`)."""
    apps_refused: str | None = None
    """Why no app target may start (the action's trusted run, exposed credentials)."""
    isolate_apps: bool = False
    """`python` targets run in a child process (the action: not next to its token)."""

    def settings(self, commit: str | None = None) -> RunSettings:
        """The engine's settings for a run of the files at `commit` (None: not a commit)."""
        return RunSettings(
            mode=self.mode, concurrency=self.concurrency,
            provider=provider_for(self.provider, self.base_url),
            base_url=self.base_url, variables=dict(self.variables), env=self.env,
            price_timestamp=self.price_timestamp, commit=commit,
            session=SessionSettings(timeout_s=self.timeout_s, attempts=self.attempts,
                                    prune=self.prune, apps_refused=self.apps_refused,
                                    isolate_apps=self.isolate_apps),
            budget=self.budget, repeat=self.repeat,
        )

    def for_base(self) -> RunOptions:
        """The base side of a comparison never records: what it would record goes to a
        throwaway tree. It is replayed, or run live when the head is."""
        return replace(self, mode="live" if self.mode == "live" else "replay")

    def priced_at(self, instant: str) -> RunOptions:
        return replace(self, price_timestamp=instant)
