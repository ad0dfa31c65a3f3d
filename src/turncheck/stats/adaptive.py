"""`repeat: auto`: how many more samples an eval needs on one side.

Sampling happens in at most two looks. The first look takes `first_look`
samples (10, or `max_repeat` if smaller). An eval whose samples all agree (every
sample passed on the same turn, or every sample failed) stops there: more
samples of a behaviour that has not varied once are unlikely to change its
verdict. Any other eval is undecided and is topped up to `max_repeat` in the
second look.

Interim looks never declare a verdict — the tests run once, on the final
samples — so no false-alarm budget is spent on them (unlike a group-sequential
test that may reject at every look, which would need alpha spending). The
stopping rule only decides where to spend calls; `benchmarks/verdicts.py`
measures the resulting false-alarm rate and the calls saved. The first look is
10 rather than 5 because 5 identical samples are weak evidence: a base passing
90 % of the time shows 5 of 5 more often than not, and 5 samples then cannot
show a drop to 50 % at a corrected significance level, while 10 of 10 can.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

FIRST_LOOK = 10


def first_look(max_repeat: int) -> int:
    return max(1, min(FIRST_LOOK, max_repeat))


def more_samples(outcomes: Sequence[Hashable], max_repeat: int) -> int:
    """How many more samples to take after `outcomes` (0: stop). An outcome is anything
    that must agree across samples: an eval's turn of pass, a protocol case's score."""
    taken = len(outcomes)
    if taken < first_look(max_repeat):
        return first_look(max_repeat) - taken
    if len(set(outcomes)) <= 1:
        return 0
    return max(0, max_repeat - taken)
