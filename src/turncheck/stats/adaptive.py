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
within each look (`turncheck.stats.looks.stratified_shift_test`) is then exact. The
plain test on all samples pooled is not: conditioning on "the first look varied" changes the
distribution of the first look's split, so the looks must be kept apart.

When the sides were sampled separately (two `turncheck run`s, or a base from another
run), each side's stop depended on its own samples, which no test conditioning on
pooled margins can undo; only the first look (a fixed number of samples on each side,
taken whatever happened) is tested (`turncheck.stats.looks.testable_looks`).

This module stays free of scipy: `turncheck run` needs the stopping rule only.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

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
