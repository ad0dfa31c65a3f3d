"""Pass rates of repeated samples: Wilson interval, pass^k, pass@k, flakiness."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

DEFAULT_CONFIDENCE = 0.95


def wilson_interval(passes: int, samples: int,
                    confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson (1927) score interval for a pass rate; (0, 1) without samples.

    Unlike the Wald interval it never collapses to a point at 0/n or n/n."""
    if samples <= 0:
        return 0.0, 1.0
    if not 0 <= passes <= samples:
        raise ValueError(f"passes must be within 0..{samples}, not {passes}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    rate = passes / samples
    denominator = 1 + z * z / samples
    centre = (rate + z * z / (2 * samples)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / samples + z * z / (4 * samples * samples))
    half /= denominator
    # Exact at the ends (0/n starts at 0, n/n ends at 1), whatever the rounding of z.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == samples else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class RateSummary:
    passes: int
    samples: int
    rate: float | None
    low: float
    high: float
    pass_all: bool
    """pass^n: every sample passed (and there was at least one)."""
    pass_any: bool
    """pass@n: at least one sample passed."""
    flaky: bool
    """Some but not all samples passed."""


def summarize_passes(outcomes: Sequence[bool]) -> RateSummary:
    """The rate summary of pass/fail outcomes."""
    samples, passes = len(outcomes), sum(outcomes)
    low, high = wilson_interval(passes, samples)
    return RateSummary(
        passes=passes, samples=samples, rate=passes / samples if samples else None,
        low=low, high=high, pass_all=samples > 0 and passes == samples, pass_any=passes > 0,
        flaky=0 < passes < samples,
    )


def pass_hat_k(passes: int, samples: int, k: int) -> float | None:
    """pass^k: the chance that k samples drawn without replacement from the n taken all
    passed, C(c, k) / C(n, k) (tau2-bench, Inspect): unbiased for the chance that k fresh
    samples all pass. None when k is outside 1..n (not estimable from n samples)."""
    if not 1 <= k <= samples:
        return None
    return math.comb(passes, k) / math.comb(samples, k)


def pass_at_k(passes: int, samples: int, k: int) -> float | None:
    """pass@k: the chance that at least one of k samples drawn without replacement
    passed, 1 − C(n − c, k) / C(n, k) (Chen et al. 2021); None when k is outside 1..n."""
    if not 1 <= k <= samples:
        return None
    return 1.0 - math.comb(samples - passes, k) / math.comb(samples, k)


DEFAULT_K = (1, 2, 4, 8, 16, 32, 64)
"""The k reported by default: powers of two up to the samples taken."""


def k_values(samples: int, wanted: Sequence[int] = DEFAULT_K) -> list[int]:
    """The k of `wanted` that n = `samples` samples can estimate (1 ≤ k ≤ n)."""
    return sorted({k for k in wanted if 1 <= k <= samples})


def pass_k_table(passes: int, samples: int, wanted: Sequence[int] = DEFAULT_K
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """pass^k and pass@k for every estimable k of `wanted`, keyed by k (as text, for JSON);
    rounded to 6 places. Empty without samples."""
    hat: dict[str, float] = {}
    at: dict[str, float] = {}
    for k in k_values(samples, wanted):
        hat[str(k)] = round(pass_hat_k(passes, samples, k) or 0.0, 6)
        at[str(k)] = round(pass_at_k(passes, samples, k) or 0.0, 6)
    return hat, at


def turn_distribution(turns: Sequence[int | None]) -> dict[str, int]:
    """How many samples passed on each turn; failures under `"fail"`. Keys sorted by turn."""
    tally = Counter(turns)
    failures = tally.pop(None, 0)
    counts = {str(turn): tally[turn] for turn in sorted(t for t in tally if t is not None)}
    if failures:
        counts["fail"] = failures
    return counts


MIN_USABLE_SHARE = 0.5
"""A side needs at least this share of its samples usable (passed or failed), and at
least one, to be judged (`turncheck.stats.verdicts`): otherwise the errors or skips,
not the model, decide."""


def usable_minimum(taken: int) -> int:
    """Fewest usable samples a side of `taken` samples needs to be judged."""
    return max(1, math.ceil(taken * MIN_USABLE_SHARE))
