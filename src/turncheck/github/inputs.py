"""The action's inputs: read from `INPUT_<NAME>` (hyphens kept) and validated here.

The runner does not enforce `required:` nor types, so every input is checked
with a clear message naming it; all problems are reported at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

from turncheck.choices import MODES as RUN_MODES
from turncheck.choices import Mode
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, parse_fail_on
from turncheck.engine.repeats import RepeatSetting
from turncheck.engine.sharding import ShardError, ShardSpec
from turncheck.formats.discovery import DEFAULT_SAMPLE_GLOBS, DEFAULT_SUITE_GLOBS, Globs
from turncheck.formats.suite import MAX_DEPTH, MAX_REPEAT
from turncheck.github.baseline import BaselineMode
from turncheck.github.bundle import BUNDLE_FILE_NAME

DEFAULT_TRUSTED_LABEL = "turncheck:trusted"
"""The label a maintainer puts on a fork's pull request to let its own report count."""


class CommentMode(StrEnum):
    ALWAYS = "always"
    ON_CHANGE = "on-change"
    NEVER = "never"


ActionMode = Literal[Mode, "estimate"]
MODES: tuple[ActionMode, ...] = (*RUN_MODES, "estimate")
BASELINE_MODES = ("auto", "artifact", "rerun")


class InputError(ValueError):
    """One or more inputs are invalid; the message lists each."""


@dataclass(frozen=True)
class ActionInputs:
    github_token: str = field(repr=False)
    globs: Globs = field(default_factory=Globs)
    mode: ActionMode = "replay"
    """How suites run; `estimate` runs none and posts what a live run would cost."""
    concurrency: int = 8
    fail_on: tuple[FailOn, ...] = DEFAULT_FAIL_ON
    cost_threshold_percent: float | None = None
    cost_threshold_usd: float | None = None
    latency_threshold_percent: float | None = None
    """`fail-on: latency`: how much slower an app suite's replies may be (live and record)."""
    min_agreement: float | None = None
    max_agreement_drop: float | None = None
    comment: CommentMode = CommentMode.ALWAYS
    max_depth: int = MAX_DEPTH
    working_directory: Path = Path(".")
    base_ref: str | None = None
    report_path: Path = Path(BUNDLE_FILE_NAME)
    shard: ShardSpec | None = None
    merge_reports: str | None = None
    baseline: BaselineMode = "auto"
    watch: tuple[str, ...] = ()
    """Repository-root-relative globs whose change runs every suite."""
    max_cost_usd: float | None = None
    max_live_tokens: int | None = None
    trusted_label: str = DEFAULT_TRUSTED_LABEL
    pr_checkout: Path | None = None
    """pull_request_target: where the PR's files are checked out, read as data only."""
    repeat: RepeatSetting | None = None
    min_kappa: float | None = None


def _raw(env: Mapping[str, str], name: str) -> str:
    return env.get(f"INPUT_{name.upper()}", "").strip()


def _list(value: str) -> list[str]:
    return [item.strip() for line in value.splitlines() for item in line.split(",") if item.strip()]


class _Reader:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def choice(self, name: str, allowed: tuple[str, ...], default: str) -> str:
        value = _raw(self.env, name) or default
        if value not in allowed:
            self.problems.append(
                f"input {name}: expected one of {', '.join(allowed)}, got {value!r}"
            )
            return default
        return value

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        value = _raw(self.env, name)
        if not value:
            return default
        try:
            number = int(value)
        except ValueError:
            number = low - 1
        if not low <= number <= high:
            self.problems.append(
                f"input {name}: expected a whole number from {low} to {high}, got {value!r}"
            )
            return default
        return number

    def amount(self, name: str) -> float | None:
        return self.number(name, 0.0, math.inf, "a number ≥ 0")

    def number(self, name: str, low: float, high: float, what: str) -> float | None:
        """An optional number from `low` to `high` (`what` says so in the problem)."""
        value = _raw(self.env, name)
        if not value:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not low <= number <= high:
            self.problems.append(f"input {name}: expected {what}, got {value!r}")
            return None
        return number

    def whole(self, name: str) -> int | None:
        """An optional whole number ≥ 0."""
        value = _raw(self.env, name)
        if not value:
            return None
        if not value.isdigit():
            self.problems.append(f"input {name}: expected a whole number ≥ 0, got {value!r}")
            return None
        return int(value)

    def kappa(self, name: str) -> float | None:
        return self.number(name, -1.0, 1.0, "a kappa from -1 to 1")

    def percent(self, name: str, what: str) -> float | None:
        value = _raw(self.env, name)
        if not value:
            return None
        try:
            number = float(value.removesuffix("%"))
        except ValueError:
            number = -1.0
        if not 0 <= number <= 100:
            self.problems.append(f"input {name}: expected {what} from 0 to 100, got {value!r}")
            return None
        return number

    def fail_on(self) -> tuple[FailOn, ...]:
        try:
            return parse_fail_on(_raw(self.env, "fail-on"))
        except ValueError as exc:
            self.problems.append(f"input fail-on: {exc}")
            return DEFAULT_FAIL_ON

    def repeat(self) -> RepeatSetting | None:
        value = _raw(self.env, "repeat")
        if not value:
            return None
        if value == "auto":
            return "auto"
        return self.integer("repeat", 1, 1, MAX_REPEAT)

    def shard(self) -> ShardSpec | None:
        value = _raw(self.env, "shard")
        if not value:
            return None
        try:
            return ShardSpec.parse(value)
        except ShardError as exc:
            self.problems.append(f"input shard: {exc}")
            return None

    def path(self, name: str, default: str) -> Path:
        value = Path(_raw(self.env, name) or default)
        if value.is_absolute() or ".." in value.parts:
            self.problems.append(
                f"input {name}: must be a relative path inside the workspace, got {str(value)!r}"
            )
            return Path(default)
        return value


def _action_mode(value: str) -> ActionMode:
    return next((mode for mode in MODES if mode == value), "replay")


def _baseline_mode(value: str) -> BaselineMode:
    return "artifact" if value == "artifact" else "rerun" if value == "rerun" else "auto"


def read_inputs(env: Mapping[str, str]) -> ActionInputs:
    reader = _Reader(env)
    inputs = ActionInputs(
        github_token=_raw(env, "github-token") or env.get("GITHUB_TOKEN", ""),
        globs=Globs(
            suites=tuple(_list(_raw(env, "suite-globs"))) or DEFAULT_SUITE_GLOBS,
            samples=tuple(_list(_raw(env, "sample-globs"))) or DEFAULT_SAMPLE_GLOBS,
            excludes=tuple(_list(_raw(env, "exclude-globs"))),
        ),
        mode=_action_mode(reader.choice("mode", MODES, "replay")),
        concurrency=reader.integer("concurrency", 8, 1, 256),
        fail_on=reader.fail_on(),
        cost_threshold_percent=reader.amount("cost-threshold-percent"),
        cost_threshold_usd=reader.amount("cost-threshold-usd"),
        latency_threshold_percent=reader.amount("latency-threshold-percent"),
        min_agreement=reader.percent("min-agreement", "a percentage"),
        max_agreement_drop=reader.percent("max-agreement-drop", "percentage points"),
        comment=CommentMode(
            reader.choice("comment", tuple(m.value for m in CommentMode), CommentMode.ALWAYS.value)
        ),
        max_depth=reader.integer("max-depth", MAX_DEPTH, 0, MAX_DEPTH),
        working_directory=reader.path("working-directory", "."),
        base_ref=_raw(env, "base-ref") or None,
        report_path=reader.path("report-path", BUNDLE_FILE_NAME),
        shard=reader.shard(),
        merge_reports=_raw(env, "merge-reports") or None,
        baseline=_baseline_mode(reader.choice("baseline", BASELINE_MODES, "auto")),
        watch=tuple(_list(_raw(env, "watch"))),
        max_cost_usd=reader.amount("max-cost-usd"),
        max_live_tokens=reader.whole("max-live-tokens"),
        trusted_label=_raw(env, "trusted-label") or DEFAULT_TRUSTED_LABEL,
        pr_checkout=reader.path("pr-checkout", ".") if _raw(env, "pr-checkout") else None,
        repeat=reader.repeat(),
        min_kappa=reader.kappa("min-kappa"),
    )
    if reader.problems:
        raise InputError("; ".join(reader.problems))
    return inputs
