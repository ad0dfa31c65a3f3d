"""`repeat: auto`: when an eval's samples stop, and why the test after it stays exact.

**Sampled alone** (one side with no partner: two separate `turncheck run`s, a head
against a pooled base, protocol cases): at most two looks. The first takes
`FIRST_LOOK` samples (10, or `max_repeat` if smaller); when they all agree (every one
passed on the same turn, or every one failed) the side stops, else it is topped up to
`max_repeat` (`more_samples`). Only the first look's size is fixed whatever the samples
said, so a comparison of two sides sampled alone tests their first looks only
(`turncheck.stats.looks.testable_looks`).

**Sampled together** (base and head in one run: the action, `turncheck diff`): a group
sequential design with looks at `joint_looks(max_repeat)` samples a side (5, 10, 20,
40, … then `max_repeat`), decided after each look by both sides' samples
(`joint_next`):

- when the pooled samples so far all agree, both sides stop (a steady eval costs 5
  samples a side);
- otherwise both go on to the next look only while the head looks at least as bad as
  the base (`keeps_sampling`: the head's summed rank scores, look by look, at least
  their expectation when nothing changed), else both stop. An eval that looks unchanged
  or better stops early; one that looks worse is sampled up to `max_repeat`.

The test after it (`turncheck.stats.looks.sequential_test`) is exact **conditional on
every look's pooled outcomes and on the look sampling stopped at**: given those, the
head's share of each look is a random split under "no change", the rule is a function
of the splits, so the law of the head's score sum is the product of the looks'
permutation laws restricted to the paths that continue at every earlier look and stop
at the last one, computed exactly. No false-alarm budget is spent on the looks.

This module stays free of numpy and scipy: `turncheck run` needs the stopping rule only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

FIRST_LOOK = 10
"""The first look of a side sampled alone."""
JOINT_FIRST_LOOK = 5
"""The first look of a side sampled together with the other side."""
SCORE_SCALE = 64
"""A sample's score is round(SCORE_SCALE × its doubled mid-rank in its look / the look's
pooled samples): comparable across looks of any size, an integer for exact laws. With
pass/fail outcomes a failure scores SCORE_SCALE more than a pass in every look."""
FUTILITY_Z = (0.25, 0.75, 1.25)
"""Both sides go on while the head's standardised score sum is at least this: after the
first look, the second, and every later one. Stricter later, where a real drop has
shown itself (a 0.9 → 0.5 drop is about 2 standard deviations out after 10 samples a
side) and a steady eval has cost enough. Chosen with benchmarks/verdicts.py."""


def futility_bound(look: int) -> float:
    """The bound after look `look` (0: the first)."""
    return FUTILITY_Z[min(look, len(FUTILITY_Z) - 1)]

Outcome = int | None
UNUSABLE = "unusable"
"""A sample that errored or was skipped, as the stopping rules see it: no evidence."""


def first_look(max_repeat: int) -> int:
    return max(1, min(FIRST_LOOK, max_repeat))


def more_samples(outcomes: Sequence[Hashable], max_repeat: int) -> int:
    """How many more samples one side takes after `outcomes` when it is sampled alone
    (no partner side to decide with; 0: stop)."""
    taken = len(outcomes)
    if taken < first_look(max_repeat):
        return first_look(max_repeat) - taken
    if len(set(outcomes)) <= 1:
        return 0
    return max(0, max_repeat - taken)


def joint_looks(max_repeat: int) -> list[int]:
    """Samples a side has taken after each look of the joint design: 5, 10, 20, … (each
    look doubles them) and finally `max_repeat`."""
    sizes: list[int] = []
    size = JOINT_FIRST_LOOK
    while size < max_repeat:
        sizes.append(size)
        size *= 2
    return [*sizes, max(1, max_repeat)]


def split_looks(outcomes: Sequence[Outcome], max_repeat: int) -> list[list[Outcome]]:
    """A side's outcomes cut at the joint design's looks (the last one may be partial)."""
    edges = [0, *joint_looks(max_repeat)]
    return [list(outcomes[a:b]) for a, b in itertools.pairwise(edges)
            if a < len(outcomes)]


def look_scores(base: Sequence[Outcome], head: Sequence[Outcome]
                ) -> tuple[list[int], list[int]]:
    """Each sample's integer score in its look (`SCORE_SCALE`): later turns and failures
    score higher (worse); ties share a score."""
    pooled = [math.inf if o is None else o for o in [*base, *head]]
    count = len(pooled)
    ordered = sorted(pooled)
    first: dict[float, int] = {}
    for index, value in enumerate(ordered):
        first.setdefault(value, index)
    # Doubled mid-rank of a value: 2 × (samples below it) + (samples equal to it) + 1.
    scores = [round(SCORE_SCALE * (2 * first[v] + ordered.count(v) + 1) / count)
              for v in pooled]
    return scores[:len(base)], scores[len(base):]


@dataclass(frozen=True)
class Moments:
    """The head's score sum over the looks so far, and its mean and variance when
    nothing changed, given each look's pooled outcomes."""

    head_sum: int = 0
    mean: float = 0.0
    variance: float = 0.0

    def add(self, base_scores: Sequence[int], head_scores: Sequence[int]) -> Moments:
        pooled = [*base_scores, *head_scores]
        count, chosen = len(pooled), len(head_scores)
        if count < 2 or not chosen or chosen == count:
            return Moments(self.head_sum + sum(head_scores), self.mean + sum(head_scores),
                           self.variance)
        average = sum(pooled) / count
        spread = sum((s - average) ** 2 for s in pooled)
        return Moments(self.head_sum + sum(head_scores), self.mean + chosen * average,
                       self.variance + chosen * (count - chosen) * spread
                       / (count * (count - 1)))


def goes_on(head_sum: float, mean: float, variance: float, look: int) -> bool:
    """The joint design's rule after look `look` that is not its last: the samples so far
    do not all agree and the head looks at least as bad as the base (`futility_bound`)."""
    return variance > 1e-12 and \
        head_sum - mean >= futility_bound(look) * math.sqrt(variance) - 1e-9


def moments_of(base_looks: Sequence[Sequence[Outcome]], head_looks: Sequence[Sequence[Outcome]]
               ) -> Moments:
    moments = Moments()
    for base, head in zip(base_looks, head_looks, strict=True):
        moments = moments.add(*look_scores(base, head))
    return moments


def keeps_sampling(base: Sequence[Outcome], head: Sequence[Outcome], max_repeat: int) -> bool:
    """Whether both sides, having taken these outcomes (whole looks), take the next look."""
    base_looks, head_looks = split_looks(base, max_repeat), split_looks(head, max_repeat)
    moments = moments_of(base_looks, head_looks)
    return goes_on(moments.head_sum, moments.mean, moments.variance, len(head_looks) - 1)


def joint_next(base: Sequence[Outcome | str], head: Sequence[Outcome | str],
               max_repeat: int) -> int:
    """How many more samples each side takes, base having taken `base` and head `head`
    at the same looks (0: stop). Both sides reach the same decision. A look with an
    `UNUSABLE` sample stops both (an outage does not buy more samples; the comparison
    then tests the first look alone)."""
    looks = joint_looks(max_repeat)
    taken = max(len(base), len(head))
    if taken < looks[0]:
        return looks[0] - taken
    later = [size for size in looks if size > taken]
    usable_base = [o for o in base if o != UNUSABLE]
    usable_head = [o for o in head if o != UNUSABLE]
    if not later or len(usable_base) < len(base) or len(usable_head) < len(head):
        return 0
    if not keeps_sampling(usable_base, usable_head, max_repeat):  # type: ignore[arg-type]
        return 0
    return later[0] - taken
