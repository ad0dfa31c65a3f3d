"""The suite-level test after `repeat: auto` with both sides sampled together
(`turncheck.stats.suite_looks`): every look of every eval, against a law that bounds the
looks sampling never took.

Validity is shown by enumeration, as in test_adaptive_design: under "no change", the
chance that the suite test rejects at level a is at most a, summed over every way every
eval's samples can fall."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import numpy as np
import pytest

from tests.unit.test_adaptive_design import _paths
from turncheck.stats import adaptive
from turncheck.stats.adaptive import joint_looks, keeps_sampling, look_scores, split_looks
from turncheck.stats.suite_looks import (
    GRID,
    EvalLaws,
    GridLaw,
    joint_eval_laws,
    look_bound,
    look_laws,
    suite_sequential_test,
)
from turncheck.stats.tests import Stratum, stratified_pass_test

Outcome = int | None
LEVELS = (0.01, 0.05, 0.1, 0.2, 0.3)


def _multisets(size: int, values: Sequence[Outcome], chances: Sequence[float]
               ) -> list[tuple[float, list[Outcome]]]:
    """Every multiset of `size` draws from `values` with its probability (for a fixed
    `repeat`: one side's samples)."""
    found = []
    for picks in itertools.product(range(len(values)), repeat=size):
        chance = float(np.prod([chances[i] for i in picks]))
        found.append((chance, [values[i] for i in sorted(picks)]))
    return found


def _joint_outcomes(max_repeat: int, values: tuple[Outcome, ...], chances: tuple[float, ...]
                    ) -> dict[tuple[object, ...], tuple[float, EvalLaws]]:
    """Each distinct bounded law (with its observed values) a jointly sampled eval can
    give under "no change", with its probability."""
    found: dict[tuple[object, ...], tuple[float, EvalLaws]] = {}
    for chance, base, head in _paths(max_repeat, values, chances):
        laws = joint_eval_laws(split_looks(base, max_repeat), split_looks(head, max_repeat),
                               max_repeat, pass_fail=len(values) == 2)
        assert laws is not None
        _add(found, chance, laws)
    return found


def _fixed_outcomes(repeat: int, values: tuple[Outcome, ...], chances: tuple[float, ...]
                    ) -> dict[tuple[object, ...], tuple[float, EvalLaws]]:
    found: dict[tuple[object, ...], tuple[float, EvalLaws]] = {}
    for (b_chance, base), (h_chance, head) in itertools.product(
            _multisets(repeat, values, chances), repeat=2):
        laws = look_laws(base, head)
        assert laws is not None
        _add(found, b_chance * h_chance, laws)
    return found


def _add(found: dict[tuple[object, ...], tuple[float, EvalLaws]], chance: float,
         laws: EvalLaws) -> None:
    key = (laws.worse.offset, laws.worse.chances.round(12).tobytes(), laws.better.offset,
           laws.better.chances.round(12).tobytes(), laws.observed_worse,
           laws.observed_better)
    before = found.get(key, (0.0, laws))[0]
    found[key] = (before + chance, laws)


@pytest.mark.parametrize("case", ["two joint evals", "joint with turns and a fixed eval"])
def test_the_suite_test_never_rejects_more_often_than_its_level(
        monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    monkeypatch.setattr(adaptive, "JOINT_FIRST_LOOK", 2)
    if case == "two joint evals":
        assert joint_looks(8) == [2, 4, 8]
        evals = [_joint_outcomes(8, (1, None), (0.5, 0.5)),
                 _joint_outcomes(8, (1, None), (0.8, 0.2))]
    else:
        evals = [_joint_outcomes(4, (1, 2, None), (0.5, 0.3, 0.2)),
                 _fixed_outcomes(3, (1, None), (0.7, 0.3))]
    worse = dict.fromkeys(LEVELS, 0.0)
    better = dict.fromkeys(LEVELS, 0.0)
    total = 0.0
    for outcomes in itertools.product(*(e.values() for e in evals)):
        chance = float(np.prod([c for c, _ in outcomes]))
        total += chance
        test = suite_sequential_test([laws for _, laws in outcomes])
        for level in LEVELS:
            worse[level] += chance * (test.worse <= level + 1e-12)
            better[level] += chance * (test.better <= level + 1e-12)
    assert total == pytest.approx(1.0)
    for level in LEVELS:
        assert worse[level] <= level + 1e-9, ("worse", level, worse[level])
        assert better[level] <= level + 1e-9, ("better", level, better[level])
    assert worse[0.3] > 0.05 and better[0.3] > 0.05  # it does reject


def _exact_law(pooled: Sequence[list[Outcome]], max_repeat: int, up: bool) -> GridLaw:
    """The exact law of the gridded centered score sum given every planned look's pooled
    outcomes, stopping by the design's rule: every split of every look, brute force."""
    values: dict[int, float] = {}
    splits = [list(itertools.combinations(range(len(p)), len(p) // 2)) for p in pooled]
    total = float(np.prod([len(s) for s in splits]))
    for picks in itertools.product(*splits):
        base: list[Outcome] = []
        head: list[Outcome] = []
        moments = adaptive.Moments()
        for index, (look, pick) in enumerate(zip(pooled, picks, strict=True)):
            b = [o for i, o in enumerate(look) if i not in pick]
            h = [look[i] for i in pick]
            base, head = base + b, head + h
            moments = moments.add(*look_scores(b, h))
            if index == len(pooled) - 1 or not keeps_sampling(base, head, max_repeat):
                break
        centered = (moments.head_sum - moments.mean) / GRID
        cell = int(np.ceil(centered - 1e-9) if up else np.floor(centered + 1e-9))
        values[cell] = values.get(cell, 0.0) + 1.0 / total
    low = min(values)
    chances = np.zeros(max(values) - low + 1)
    for cell, chance in values.items():
        chances[cell - low] = chance
    return GridLaw(low, chances)


def _dense(law: GridLaw) -> np.ndarray:
    """The law's chances on the cells -200..199."""
    dense = np.zeros(400)
    dense[law.offset + 200:law.offset + 200 + len(law.chances)] = law.chances
    assert dense.sum() == pytest.approx(1.0)
    return dense


def _survival(law: GridLaw) -> np.ndarray:
    tail: np.ndarray = np.cumsum(_dense(law)[::-1])[::-1]
    return tail


def _cdf(law: GridLaw) -> np.ndarray:
    cumulative: np.ndarray = np.cumsum(_dense(law))
    return cumulative


@pytest.mark.parametrize("values", [(1, None), (1, 2, None)])
def test_the_bounded_law_lies_above_the_exact_one_whatever_the_unseen_looks_held(
        monkeypatch: pytest.MonkeyPatch, values: tuple[Outcome, ...]) -> None:
    monkeypatch.setattr(adaptive, "JOINT_FIRST_LOOK", 2)
    sizes = [2, 2, 4]  # max_repeat 8
    generator = random.Random(7)
    checked = 0
    for _ in range(3):
        pooled = [[generator.choice(values) for _ in range(2 * size)] for size in sizes]
        above, below = _survival(_exact_law(pooled, 8, True)), _cdf(_exact_law(pooled, 8, False))
        # Every path's own bounded law, from the looks it took only.
        for picks in itertools.product(*[itertools.combinations(range(2 * s), s)
                                         for s in sizes]):
            base_looks: list[list[Outcome]] = []
            head_looks: list[list[Outcome]] = []
            for look, pick in zip(pooled, picks, strict=True):
                base_looks.append([o for i, o in enumerate(look) if i not in pick])
                head_looks.append([look[i] for i in pick])
                flat_b = [o for b in base_looks for o in b]
                flat_h = [o for h in head_looks for o in h]
                if len(base_looks) == len(sizes) or not keeps_sampling(flat_b, flat_h, 8):
                    break
            laws = joint_eval_laws(base_looks, head_looks, 8, pass_fail=len(values) == 2)
            assert laws is not None
            assert np.all(_survival(laws.worse) >= above - 1e-12)
            assert np.all(_cdf(laws.better) >= below - 1e-12)
            checked += 1
    assert checked > 1000


def test_one_look_moves_the_centered_sum_by_at_most_the_bound() -> None:
    for size in (1, 2, 3, 4):
        for pooled in itertools.combinations_with_replacement([1, 2, None], 2 * size):
            best = 0.0
            for pick in itertools.combinations(range(2 * size), size):
                base = [o for i, o in enumerate(pooled) if i not in pick]
                head = [pooled[i] for i in pick]
                moments = adaptive.Moments().add(*look_scores(base, head))
                best = max(best, abs(moments.head_sum - moments.mean))
            assert best <= look_bound(size) + 1e-9
        # Reached (up to rounding) by a head failing every sample a passing base passed.
        moments = adaptive.Moments().add(*look_scores([1] * size, [None] * size))
        assert moments.head_sum - moments.mean >= look_bound(size) - size / 2 - 1e-9


def test_the_suite_test_uses_the_looks_after_the_first() -> None:
    # Three evals whose first looks differ by one failure (the design goes on), and
    # whose later looks show the drop: the first looks alone cannot tell.
    base = [1] * 20
    head = [1, 1, 1, 1, None] + [1, None] * 7 + [None]
    assert keeps_sampling(base[:5], head[:5], 20)
    assert keeps_sampling(base[:10], head[:10], 20)
    first_only = stratified_pass_test([Stratum(5, 5, 4, 5)] * 3)
    assert first_only.worse > 0.1
    laws = joint_eval_laws(split_looks(base, 20), split_looks(head, 20), 20, pass_fail=True)
    assert laws is not None
    assert suite_sequential_test([laws] * 3).worse < 1e-3
