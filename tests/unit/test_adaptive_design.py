"""`repeat: auto` with both sides together: the group sequential design (first look of 5,
then doubling while the head looks at least as bad) and its exact test.

Validity is shown by enumeration, not simulation: under "no change", the chance that the
test rejects at level a is at most a, summed over every way the samples can fall."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import pytest

from turncheck.stats import adaptive
from turncheck.stats.adaptive import joint_looks, joint_next, keeps_sampling
from turncheck.stats.looks import sequential_law, sequential_test

Outcome = int | None


def test_the_looks_start_at_five_and_double_up_to_max_repeat() -> None:
    assert joint_looks(20) == [5, 10, 20]
    assert joint_looks(40) == [5, 10, 20, 40]
    assert joint_looks(30) == [5, 10, 20, 30]
    assert joint_looks(3) == [3]


def test_a_steady_eval_stops_after_five_samples_a_side() -> None:
    assert joint_next([], [], 20) == 5
    assert joint_next([1] * 5, [1] * 5, 20) == 0
    assert joint_next([None] * 5, [None] * 5, 20) == 0


def test_sampling_goes_on_only_while_the_head_looks_at_least_as_bad() -> None:
    worse = [1, 1, 1, None, None]
    assert joint_next([1] * 5, worse, 20) == 5  # head worse: the next look, to 10
    assert joint_next(worse, [1] * 5, 20) == 0  # head better: stop
    assert joint_next([1] * 5, [1] * 4 + [2], 20) == 5  # a later turn is worse too
    assert joint_next([1] * 10, worse + [None] * 5, 20) == 10  # to 20
    assert joint_next([1] * 20, [None] * 20, 20) == 0  # max_repeat
    # A tie stops: the same failures on both sides say nothing of a drop.
    assert not keeps_sampling([1, 1, 1, 1, None], [1, 1, 1, 1, None], 20)


def _looks(outcomes: list[Outcome], max_repeat: int) -> list[list[Outcome]]:
    return adaptive.split_looks(outcomes, max_repeat)


def _paths(max_repeat: int, values: tuple[Outcome, ...], chances: tuple[float, ...]
           ) -> Iterator[tuple[float, list[Outcome], list[Outcome]]]:
    """Every way both sides' samples can fall under "no change" (each look's samples as
    a multiset: the statistic and the rule do not depend on their order), with its
    probability, sampling by the design's rule."""
    def multisets(size: int) -> Iterator[tuple[float, list[Outcome]]]:
        for counts in itertools.product(range(size + 1), repeat=len(values)):
            if sum(counts) != size:
                continue
            ways = math.factorial(size)
            chance = 1.0
            for count, p in zip(counts, chances, strict=True):
                ways //= math.factorial(count)
                chance *= p ** count
            yield ways * chance, [v for v, c in zip(values, counts, strict=True)
                                  for _ in range(c)]

    def extend(chance: float, base: list[Outcome], head: list[Outcome]
               ) -> Iterator[tuple[float, list[Outcome], list[Outcome]]]:
        more = joint_next(base, head, max_repeat)
        if more == 0:
            yield chance, base, head
            return
        for (b_chance, b), (h_chance, h) in itertools.product(multisets(more), repeat=2):
            yield from extend(chance * b_chance * h_chance, base + b, head + h)

    yield from extend(1.0, [], [])


@pytest.mark.parametrize(("values", "chances"), [
    ((1, None), (0.5, 0.5)),
    ((1, None), (0.85, 0.15)),
    ((1, 2, None), (0.5, 0.3, 0.2)),
])
def test_the_sequential_test_never_rejects_more_often_than_its_level(
        monkeypatch: pytest.MonkeyPatch, values: tuple[Outcome, ...],
        chances: tuple[float, ...]) -> None:
    monkeypatch.setattr(adaptive, "JOINT_FIRST_LOOK", 2)
    max_repeat = 8 if len(values) == 2 else 4
    assert joint_looks(max_repeat) == ([2, 4, 8] if max_repeat == 8 else [2, 4])
    levels = (0.01, 0.05, 0.1, 0.2, 0.3)
    rejected = dict.fromkeys(levels, 0.0)
    total = 0.0
    stopped_early = 0.0
    for chance, base, head in _paths(max_repeat, values, chances):
        total += chance
        stopped_early += chance * (len(head) < max_repeat)
        test = sequential_test(_looks(base, max_repeat), _looks(head, max_repeat), max_repeat)
        assert test is not None
        for level in levels:
            rejected[level] += chance * (test.worse <= level + 1e-12)
    assert total == pytest.approx(1.0)
    assert stopped_early > 0.3  # the design does stop early
    for level, chance in rejected.items():
        assert chance <= level + 1e-9, (level, chance)


def test_the_law_is_the_within_look_permutation_law_on_the_paths_that_stop_there(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adaptive, "JOINT_FIRST_LOOK", 2)
    base, head = [1, 1, None, 2], [1, None, 1, 1]  # on after look 1, off after look 2
    looks_b, looks_h = _looks(base, 8), _looks(head, 8)
    law = sequential_law(looks_b, looks_h, 8)
    assert law is not None
    # Brute force: every split of each look's pooled samples, kept when the rule takes
    # the same path (on at look 1, off at look 2).
    pooled = [b + h for b, h in zip(looks_b, looks_h, strict=True)]
    kept: dict[int, int] = {}
    for picks in itertools.product(*(itertools.combinations(range(4), 2) for _ in pooled)):
        sides = [([o for i, o in enumerate(p) if i not in pick], [p[i] for i in pick])
                 for p, pick in zip(pooled, picks, strict=True)]
        b1, h1 = sides[0]
        b2, h2 = sides[1]
        if joint_next(b1, h1, 8) == 0 or joint_next(b1 + b2, h1 + h2, 8) != 0:
            continue
        total = sum(sum(adaptive.look_scores(b, h)[1]) for b, h in sides)
        kept[total] = kept.get(total, 0) + 1
    count = sum(kept.values())
    assert dict(zip(law.values.tolist(), law.chances.tolist(), strict=True)) == \
        pytest.approx({value: n / count for value, n in kept.items()})


def test_looks_that_are_not_the_designs_are_not_tested_sequentially() -> None:
    # An errored sample left the second look short: only the first look is testable.
    assert sequential_test([[1] * 5, [1] * 4], [[None] * 5, [None] * 5], 20) is None
    # An older report's first look of 10.
    assert sequential_test([[1] * 10], [[None] * 10], 20) is None
