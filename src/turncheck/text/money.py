"""One rule for showing money and changes, everywhere a figure is printed.

Dollars keep three significant digits of the largest amount shown together, and
amounts shown together (base, head, Δ of one row) share their number of decimals, so
the Δ reads as the difference of the two figures beside it: `$0.00310 → $0.00326
(+$0.00016, +5.2%)`. Amounts of a dollar or more get cents. Every cost change carries
its percentage of the base, decreases included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MINUS = "\u2212"
PLUS_MINUS = "\u00b1"
SIGNIFICANT_DIGITS = 3


def _finite(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def decimals_for(*values: float | None) -> int:
    """Decimals that give the largest of `values` three significant digits (at least 2)."""
    largest = max((abs(v) for v in _finite(values)), default=0.0)
    if largest == 0 or largest >= 1:
        return 2
    return max(2, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(largest)))


def usd(value: float | None, decimals: int | None = None) -> str:
    """`$1.23`, `$0.00326`, `$0`; `unpriced` for None."""
    if value is None:
        return "unpriced"
    if not math.isfinite(value):
        return "n/a"
    places = decimals_for(value) if decimals is None else decimals
    if round(value, places) == 0:
        return "$0"
    sign = MINUS if value < 0 else ""
    return f"{sign}${abs(value):,.{places}f}"


def signed_usd(value: float | None, decimals: int | None = None) -> str:
    """A change: `+$0.0012`, `−$0.0012`, `±$0`; `n/a` when unknown."""
    if value is None or not math.isfinite(value):
        return "n/a"
    places = decimals_for(value) if decimals is None else decimals
    if round(value, places) == 0:
        return f"{PLUS_MINUS}$0"
    return f"{_sign(value)}${abs(value):,.{places}f}"


def percent_change(base: float | None, head: float | None) -> str:
    """`+39.6%`, `−5.0%`, `0%`; `new` from nothing, `n/a` when unknown."""
    if base is None or head is None or not math.isfinite(base) or not math.isfinite(head):
        return "n/a"
    if base == 0:
        return "0%" if head == 0 else "new"
    change = round((head - base) / abs(base) * 100, 1)
    if change == 0:
        return "0%"
    return f"{_sign(change)}{abs(change):,.1f}%"


@dataclass(frozen=True)
class MoneyRow:
    """Base, head, Δ and Δ % of one cost figure, formatted alike."""

    base: str
    head: str
    delta: str
    percent: str

    @staticmethod
    def of(base: float | None, head: float | None, has_base: bool = True) -> MoneyRow:
        if not has_base:
            return MoneyRow("—", usd(head), "—", "—")
        places = decimals_for(base, head)
        delta = None if base is None or head is None else round(head, places) - round(base, places)
        return MoneyRow(usd(base, places), usd(head, places), signed_usd(delta, places),
                        percent_change(base, head))

    @property
    def change(self) -> str:
        """`+$0.0081 (+39.6%)`."""
        return f"{self.delta} ({self.percent})"


def pct(value: float | None) -> str:
    """A relative change given as a fraction: 0.125 → `+12.5%`; None or non-finite → `n/a`."""
    if value is None or not math.isfinite(value):
        return "n/a"
    percent = round(value * 100, 1)
    if percent == 0:
        return "0%"
    return _sign(percent) + f"{abs(percent):,.1f}%"


def signed_int(value: int | None) -> str:
    """`+12`, `−3`, `0`, or `n/a`."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    return _sign(value) + f"{abs(value):,}"


def score_text(value: float | None, places: int = 2) -> str:
    """A score: `0.75`, `−0.25` (never `−0.00`); `—` for none."""
    if value is None:
        return "—"
    shown = f"{round(value, places) + 0.0:.{places}f}"  # + 0.0: no negative zero
    return shown.replace("-", MINUS)


def rating_text(rating: float, scale: Sequence[int], mean: bool = False) -> str:
    """A judge's rating on its scale: `7/10` on a scale from 1, `7 on 0–10` otherwise; a
    `mean` of ratings with one decimal (`7.0/10`)."""
    shown = f"{rating:.1f}" if mean or not float(rating).is_integer() else f"{rating:g}"
    return f"{shown}/{scale[1]}" if scale[0] == 1 else f"{shown} on {scale[0]}–{scale[1]}"


def score_change(base: float | None, head: float | None, places: int = 2) -> str:
    """A score delta computed from the rounded scores it is shown beside."""
    if base is None or head is None:
        return "—"
    delta = round(round(head, places) - round(base, places), places)
    if delta == 0:
        return f"{PLUS_MINUS}{0:.{places}f}"
    return f"{_sign(delta)}{abs(delta):.{places}f}"


def _sign(value: float) -> str:
    if value > 0:
        return "+"
    if value < 0:
        return MINUS
    return PLUS_MINUS
