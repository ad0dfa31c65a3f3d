"""Split a run's evals across N shards (matrix jobs) deterministically.

Placement is bounded-load rendezvous hashing: every eval ranks the shards by a
hash of (eval, shard) and goes to the first one whose load, counted in expected
turns, stays under (1 + SLACK) × the mean. Every shard computes the same plan
from the same files, an eval's first choice never depends on other evals, and
adding evals moves few existing ones.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from turncheck.formats.suite import CheckList, Eval, FollowUp, OrGroup, level_items
from turncheck.formats.suite_loader import SuiteFile
from turncheck.report.run import ShardInfo

SLACK = 0.1
MAX_SHARDS = 256
_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class ShardError(ValueError):
    """A malformed `I/N` shard specification."""


@dataclass(frozen=True)
class ShardSpec:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> ShardSpec:
        match = _SPEC.fullmatch(text)
        if match is None:
            raise ShardError(f"shard must look like I/N (e.g. 2/7), got {text!r}")
        index, count = int(match[1]), int(match[2])
        if not 1 <= index <= count <= MAX_SHARDS:
            raise ShardError(f"shard {text!r}: need 1 ≤ I ≤ N ≤ {MAX_SHARDS}")
        return cls(index, count)


def _follow_ups(checks: CheckList) -> Iterable[FollowUp]:
    items, _ = level_items(checks)
    for item in items:
        if isinstance(item, FollowUp):
            yield item
        elif isinstance(item, OrGroup):
            yield from _follow_ups(item)
        elif item.follow_up is not None:
            yield item.follow_up


def longest_path(checks: CheckList) -> int:
    """Turns on the longest follow-up path from this level (this level included)."""
    return 1 + max((longest_path(f.checks) for f in _follow_ups(checks)), default=0)


def expected_turns(evaluation: Eval) -> int:
    """The eval's weight: the turns of its longest path, an upper bound on its cost."""
    if evaluation.user is not None:
        return evaluation.user.max_turns
    return sum(longest_path(step.checks) for step in evaluation.steps)


def eval_key(suite_path: str, eval_name: str) -> str:
    return f"{suite_path}\0{eval_name}"


def _score(key: str, shard: int) -> bytes:
    return hashlib.sha256(f"{key}\0{shard}".encode()).digest()


def plan(weights: dict[str, int], count: int) -> dict[str, int]:
    """Eval key → shard (1-based), balanced by weight."""
    total = sum(weights.values())
    capacity = math.ceil(total / count * (1 + SLACK)) + max(weights.values(), default=0)
    load = [0] * (count + 1)
    placement: dict[str, int] = {}
    for key in sorted(weights, key=lambda k: hashlib.sha256(k.encode()).digest()):
        weight = weights[key]
        ranked = sorted(range(1, count + 1), key=lambda shard: _score(key, shard), reverse=True)
        shard = next((s for s in ranked if load[s] + weight <= capacity), None)
        if shard is None:
            shard = min(range(1, count + 1), key=lambda s: load[s])
        load[shard] += weight
        placement[key] = shard
    return placement


def plan_digest(keys: Iterable[str], count: int) -> str:
    digest = hashlib.sha256(str(count).encode())
    for key in sorted(keys):
        digest.update(b"\n" + key.encode())
    return digest.hexdigest()[:16]


def _weights(files: list[SuiteFile]) -> dict[str, int]:
    return {
        eval_key(f.path, e.display_name): expected_turns(e)
        for f in files
        if f.suite is not None
        for e in f.suite.evals
    }


def _whole_file_shard(loaded: SuiteFile, count: int) -> int | None:
    if getattr(loaded, "protocol", None) is None:
        return None
    return max(range(1, count + 1), key=lambda shard: _score(loaded.path, shard))


def select_shard(files: list[SuiteFile], spec: ShardSpec) -> tuple[list[SuiteFile], ShardInfo]:
    """This shard's part of `files` (suites left without evals are dropped)."""
    weights = _weights(files)
    placement = plan(weights, spec.count)
    chosen: list[SuiteFile] = []
    for loaded in files:
        if loaded.suite is None:
            if _whole_file_shard(loaded, spec.count) == spec.index:
                chosen.append(loaded)  # a protocol suite: its cases stay together
            continue
        mine = [
            e
            for e in loaded.suite.evals
            if placement[eval_key(loaded.path, e.display_name)] == spec.index
        ]
        if mine:
            suite = loaded.suite.model_copy(update={"evals": mine})
            chosen.append(SuiteFile(loaded.path, suite, [], loaded.location))
    info = ShardInfo(index=spec.index, count=spec.count, plan=plan_digest(weights, spec.count))
    return chosen, info
