"""`repeat: auto`: when an eval's samples stop, and the test that stays exact after it.

Sampling happens in at most two looks. The first look takes `first_look` samples
(10, or `max_repeat` if smaller) on each side. The stopping decision is made per eval
from **both sides' samples together** (`joint_more_samples`): if the pooled samples of
the look all agree (every sample of base and head passed on the same turn, or every
one failed), both sides stop; otherwise both are topped up to `max_repeat`. A base
that passed 10 of 10 is therefore topped up when the head did not.

Why pooled: under "base and head behave the same" the side labels of the samples of
one look are exchangeable. A rule that sees a look only through its pooled multiset of
outcomes (the look's margins) is fixed once those margins are fixed, so *conditional
on every look's margins* each look's split between base and head is still uniformly
random, whatever was stopped. The permutation test that permutes the side labels
within each look (`stratified_shift_test`) is then exact. The plain test on all
samples pooled is not: conditioning on "the first look varied" changes the
distribution of the first look's split, so the looks must be kept apart.

When the sides were sampled separately (two `turncheck run`s, or a base from another
run), each side's stop depended on its own samples, which no test conditioning on
pooled margins can undo; only the first look (a fixed number of samples on each side,
taken whatever happened) is tested (`testable_looks`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from turncheck.stats.tests import MID_P, Outcome, ShiftTest, _rank_sum_distribution, outcome_ranks

FIRST_LOOK = 10


def first_look(max_repeat: int) -> int:
    return max(1, min(FIRST_LOOK, max_repeat))


def more_samples(outcomes: Sequence[Hashable], max_repeat: int) -> int:
    """How many more samples one side takes after `outcomes` when it is sampled alone
    (no partner side to decide with; 0: stop)."""
    return joint_more_samples(outcomes, (), max_repeat)


def joint_more_samples(mine: Sequence[Hashable], partner: Sequence[Hashable],
                       max_repeat: int) -> int:
    """How many more samples a side that has taken `mine` takes, its partner side (the
    other side of the comparison) having taken `partner` at the same looks (0: stop).

    The decision sees the two sides only through their pooled outcomes, so both sides
    reach the same decision and the test stratified by look stays exact."""
    taken = len(mine)
    if taken < first_look(max_repeat):
        return first_look(max_repeat) - taken
    if len(set(mine) | set(partner)) <= 1:
        return 0
    return max(0, max_repeat - taken)


# -- the test after adaptive sampling ---------------------------------------------------


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
    looks = [look for look in looks if look.base and look.head]
    if not looks:
        return ShiftTest(1.0, 1.0)
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
    total = counts.sum()
    half = MID_P * counts[observed]
    worse = float((counts[observed:].sum() - half) / total)
    better = float((counts[: observed + 1].sum() - half) / total)
    possible = np.nonzero(counts)[0]
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float((1 - MID_P) * counts[possible[-1]] / total),
                     least_better=float((1 - MID_P) * counts[possible[0]] / total))
