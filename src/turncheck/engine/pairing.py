"""Joint adaptive sampling of a comparison's two sides (`repeat: auto`, docs/statistics.md).

Base and head run at the same time (one `Pairing`, one `SideOfPair` per side). After
each look, an eval's sampler publishes the look's outcomes and waits for the other
side's same look; both then decide with `turncheck.stats.adaptive.joint_next` on
both sides' outcomes, so both take the same next look. An eval only one side has (a
new or removed eval), a side whose plan differs, or a side that ended its run decides
alone; such an eval is not marked paired, and the comparison then tests its first look
only. Waiting holds no concurrency slot, so a side waiting on the other never blocks it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from turncheck.stats.adaptive import UNUSABLE, Outcome, joint_looks, joint_next

Side = Literal["base", "head"]
PairKey = tuple[str, str]
"""(the suite's path as the head names it, the eval's name)."""


@dataclass
class _Key:
    looks: dict[Side, list[tuple[int, tuple[Hashable, ...]]]] = field(
        default_factory=lambda: {"base": [], "head": []})
    """Per side, each look's (max_repeat, outcomes so far)."""
    done: set[Side] = field(default_factory=set)


class Pairing:
    """What both sides have sampled so far, per eval."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self._keys: dict[PairKey, _Key] = {}
        self._declared: dict[Side, set[PairKey]] = {}
        self._closed: set[Side] = set()
        self._changed = asyncio.Event()

    def side(self, side: Side, renames: dict[str, str] | None = None) -> SideOfPair:
        """The handle one side's run uses; `renames` maps this side's suite paths to the
        head's (a base suite renamed at head)."""
        return SideOfPair(self, side, dict(renames or {}))

    def declare(self, side: Side, keys: Iterable[PairKey]) -> None:
        self._declared[side] = set(keys)
        self._notify()

    def close(self, side: Side) -> None:
        """This side samples no more: the other side stops waiting for it."""
        self._closed.add(side)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _key(self, key: PairKey) -> _Key:
        return self._keys.setdefault(key, _Key())

    def publish(self, side: Side, key: PairKey, max_repeat: int,
                outcomes: Sequence[Hashable]) -> None:
        self._key(key).looks[side].append((max_repeat, tuple(outcomes)))
        self._notify()

    def finish(self, side: Side, key: PairKey) -> None:
        self._key(key).done.add(side)
        self._notify()

    async def partner_look(self, side: Side, key: PairKey, look: int
                           ) -> tuple[int, tuple[Hashable, ...]] | None:
        """The other side's `look`-th look (0-based) of `key`, once it is taken; None when
        it never will be."""
        other: Side = "head" if side == "base" else "base"
        while True:
            state = self._key(key)
            if len(state.looks[other]) > look:
                return state.looks[other][look]
            if (other in self._closed or other in state.done
                    or (other in self._declared and key not in self._declared[other])):
                return None
            await self._changed.wait()


def run_id_of(handle: SideOfPair | None) -> str:
    """The `run_id` a run's report carries: its pairing's token when it ran together
    with the other side (both sides' reports then share it), else a new one."""
    return secrets.token_hex(8) if handle is None else handle.pairing.token


@dataclass
class SideOfPair:
    pairing: Pairing
    side: Side
    renames: dict[str, str]

    def key(self, suite_path: str, name: str) -> PairKey:
        return self.renames.get(suite_path, suite_path), name

    def declare(self, keys: Iterable[PairKey]) -> None:
        self.pairing.declare(self.side, keys)

    def close(self) -> None:
        self.pairing.close(self.side)

    def sampler(self, key: PairKey) -> JointSampler:
        return JointSampler(self, key)


@dataclass
class JointSampler:
    """One eval's stopping decisions on one side, taken with the other side."""

    side: SideOfPair
    key: PairKey
    paired: bool = True
    """Every decision so far was made with the other side's samples of the same look."""
    looks: list[int] = field(default_factory=list)
    """The number of samples at each decision taken with the other side."""

    async def more(self, outcomes: Sequence[Hashable], max_repeat: int) -> int:
        """Samples to take next (0: stop), after this side has taken `outcomes`."""
        pairing, side = self.side.pairing, self.side.side
        mine = [_outcome(o) for o in outcomes]
        if len(mine) < joint_looks(max_repeat)[0]:
            return joint_next(mine, mine, max_repeat)  # the plan decides: the first look
        if len(mine) >= max_repeat:
            pairing.finish(side, self.key)
            return 0
        self.looks.append(len(mine))
        pairing.publish(side, self.key, max_repeat, outcomes)
        partner = await pairing.partner_look(side, self.key, len(self.looks) - 1)
        if partner is None or partner[0] != max_repeat:
            self.paired = False
            wanted = more_alone(mine, max_repeat)
        else:
            theirs = [_outcome(o) for o in partner[1]]
            base, head = (mine, theirs) if side == "base" else (theirs, mine)
            wanted = joint_next(base, head, max_repeat)
        if wanted <= 0:
            pairing.finish(side, self.key)
        return wanted

    def finish(self) -> None:
        """Sampling of this eval ended (also by an error): the other side stops waiting."""
        self.side.pairing.finish(self.side.side, self.key)


def _outcome(value: Hashable) -> Outcome | str:
    return value if isinstance(value, int) or value == UNUSABLE else None


def more_alone(outcomes: Sequence[Outcome | str], max_repeat: int) -> int:
    """A side whose partner is gone after the first look: stop when its samples all
    agree, else top up to `max_repeat` (it is not paired, so the comparison tests its
    first look only)."""
    if len(set(outcomes)) <= 1:
        return 0
    return max(0, max_repeat - len(outcomes))
