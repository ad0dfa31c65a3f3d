"""The test after `repeat: auto` (`turncheck.stats.adaptive`): which looks a valid test
may use for how the two sides were sampled, and the exact rank-sum test stratified by
look."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from turncheck.stats.tests import (
    Outcome,
    ShiftTest,
    _null_law,
    _rank_sum_distribution,
    outcome_ranks,
    turn_shift_test,
)


@dataclass(frozen=True)
class Look:
    """One look's samples on both sides."""

    base: Sequence[Outcome]
    head: Sequence[Outcome]


def testable_looks(base: Sequence[Sequence[Outcome]], head: Sequence[Sequence[Outcome]],
                   joint: bool) -> list[Look]:
    """The looks a valid test may use, from each side's outcomes per look (a side sampled
    in one go, a fixed `repeat`, has one look): every look when the two sides' stopping
    was decided jointly (they then took the same looks), else the first look of each
    (its size was fixed in advance, whatever the samples said)."""
    if joint and len(base) == len(head):
        return [Look(b, h) for b, h in zip(base, head, strict=True) if b or h]
    return [Look(base[0] if base else (), head[0] if head else ())]


def stratified_shift_test(looks: Sequence[Look]) -> ShiftTest:
    """The exact rank-sum permutation test of `turncheck.stats.tests.turn_shift_test`,
    with side labels permuted within each look only.

    Scores are the mid-ranks of all samples pooled (a function of the pooled multiset,
    which within-look permutations leave unchanged); the null distribution of the head's
    rank sum is the convolution of each look's subset-sum distribution. With one look
    this is `turn_shift_test`; with pass/fail outcomes it is the exact conditional test
    of a common odds ratio of 1 over the looks."""
    import numpy as np
    looks = [look for look in looks if look.base and look.head]
    if not looks:
        return ShiftTest(1.0, 1.0)
    if len(looks) == 1:
        return turn_shift_test(looks[0].base, looks[0].head)
    base = [o for look in looks for o in look.base]
    head = [o for look in looks for o in look.head]
    ranks, _ = outcome_ranks(base, head)
    base_ranks, head_ranks = ranks[:len(base)], ranks[len(base):]
    counts = np.ones(1)
    observed = 0
    b = h = 0
    for look in looks:
        look_base = base_ranks[b:b + len(look.base)]
        look_head = head_ranks[h:h + len(look.head)]
        b, h = b + len(look.base), h + len(look.head)
        counts = np.convolve(counts, _rank_sum_distribution([*look_base, *look_head],
                                                            len(look_head)))
        observed += sum(look_head)
    return _tail_test(counts, observed)


def _tail_test(counts: np.ndarray, observed: int) -> ShiftTest:
    """Exact one-sided p-values of the observed rank sum under the law `counts`, with
    that law's attainable p-values (for the discrete multiplicity procedure)."""
    import numpy as np
    sums = np.nonzero(counts)[0]
    chances = counts[sums] / counts.sum()
    worse = float(chances[sums >= observed].sum())
    better = float(chances[sums <= observed].sum())
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float(chances[-1]), least_better=float(chances[0]),
                     worse_null=_null_law(sums, chances, worse=True),
                     better_null=_null_law(sums, chances, worse=False))
