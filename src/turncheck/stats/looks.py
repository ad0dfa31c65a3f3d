"""The test after `repeat: auto` (`turncheck.stats.adaptive`): which looks a valid test
may use for how the two sides were sampled; the exact rank-sum test stratified by look
(looks whose stopping saw only pooled outcomes); and the exact test of the joint
sequential design, conditional on each look's pooled outcomes and on the look it
stopped at (`sequential_test`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from turncheck.stats.adaptive import (
    Moments,
    futility_bound,
    joint_looks,
    look_scores,
)
from turncheck.stats.tests import (
    Outcome,
    ShiftTest,
    _category_law,
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


@dataclass(frozen=True)
class ScoreLaw:
    """The exact law of a statistic (integer values, their chances) and its observed
    value."""

    values: np.ndarray
    chances: np.ndarray
    observed: int


def sequential_law(base: Sequence[Sequence[Outcome]], head: Sequence[Sequence[Outcome]],
                   max_repeat: int) -> ScoreLaw | None:
    """The law of the head's summed look scores (`adaptive.look_scores`) under "no
    change", given every look's pooled outcomes and that both sides stopped after the
    look they stopped at, for the joint design of `adaptive.joint_next`; `base`/`head`
    are each side's outcomes per look. None when the looks are not the design's (an
    errored sample left a look short, or the report predates the design): only the
    first look can then be tested."""
    import numpy as np
    planned = joint_looks(max_repeat)
    sizes = [b - a for a, b in itertools.pairwise([0, *planned])]
    reached = len(head)
    if not reached or len(base) != reached or reached > len(sizes) or any(
            len(b) != size or len(h) != size
            for b, h, size in zip(base, head, sizes, strict=False)):
        return None
    state, moments = np.ones(1), Moments()
    for index, (b, h) in enumerate(zip(base, head, strict=True)):
        base_scores, head_scores = look_scores(b, h)
        state = np.convolve(state, _sum_law([*base_scores, *head_scores], len(head_scores)))
        moments = moments.add(base_scores, head_scores)
        if index == len(sizes) - 1:
            break  # the design's last look: every path stops here
        going = _goes_on(np.arange(len(state)), moments, index)
        state = np.where(going if index < reached - 1 else ~going, state, 0.0)
    total = state.sum()
    observed = moments.head_sum
    if total <= 0 or observed >= len(state) or state[observed] <= 0:
        return None
    possible = np.nonzero(state)[0]
    return ScoreLaw(possible, state[possible] / total, observed)


def _goes_on(sums: np.ndarray, moments: Moments, look: int) -> np.ndarray:
    """`adaptive.goes_on` for every possible head score sum at once (the same formula)."""
    import numpy as np
    if moments.variance <= 1e-12:
        return np.zeros(len(sums), dtype=bool)
    going: np.ndarray = sums.astype(np.float64) - moments.mean >= \
        futility_bound(look) * np.sqrt(moments.variance) - 1e-9
    return going


def _sum_law(scores: Sequence[int], chosen: int) -> np.ndarray:
    """counts[s]: the share of `chosen`-element subsets of `scores` summing to s."""
    import numpy as np
    law = _category_law(scores, chosen)
    if law is None:
        counts = _rank_sum_distribution(scores, chosen)
        dense: np.ndarray = counts / counts.sum()
        return dense
    sums, chances = law
    summed: np.ndarray = np.bincount(np.asarray(sums, dtype=np.int64), weights=chances,
                                     minlength=int(max(sums)) + 1)
    return summed


def law_test(law: ScoreLaw) -> ShiftTest:
    """Exact one-sided p-values of `law.observed` (large is worse), with the law's
    attainable p-values for the discrete multiplicity procedure."""
    values, chances = law.values, law.chances
    worse = float(chances[values >= law.observed].sum())
    better = float(chances[values <= law.observed].sum())
    return ShiftTest(min(1.0, worse), min(1.0, better),
                     least_worse=float(chances[-1]), least_better=float(chances[0]),
                     worse_null=_null_law(values, chances, worse=True),
                     better_null=_null_law(values, chances, worse=False))


def sequential_test(base: Sequence[Sequence[Outcome]], head: Sequence[Sequence[Outcome]],
                    max_repeat: int) -> ShiftTest | None:
    """The joint design's exact test (`sequential_law`); None when it does not apply."""
    law = sequential_law(base, head, max_repeat)
    return None if law is None else law_test(law)
