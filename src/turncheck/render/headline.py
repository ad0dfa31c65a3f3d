"""The verdict in one line, and the counts under it: the comment's heading, the check
run's title and the step summary's first line are this same text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from turncheck.compare.comparison import Comparison
from turncheck.render.severity import Finding, Group
from turncheck.text.money import MoneyRow

_LEADS = (
    (Group.REGRESSION, "regression", "regressions"),
    (Group.ERROR, "error", "errors"),
    (Group.BROKEN, "broke", "broke"),
    (Group.LIKELY_REGRESSION, "likely regression", "likely regressions"),
    (Group.LATER_TURN, "later turn", "later turns"),
    (Group.IMPROVEMENT, "improvement", "improvements"),
    (Group.FIXED, "fixed", "fixed"),
    (Group.EARLIER_TURN, "earlier turn", "earlier turns"),
    (Group.NEW, "new", "new"),
    (Group.REMOVED, "removed", "removed"),
)


WARNING_GROUPS = (Group.ERROR, Group.REGRESSION, Group.BROKEN, Group.LIKELY_REGRESSION,
                  Group.LATER_TURN)
@dataclass(frozen=True)
class Headline:
    icon: str
    text: str
    """The verdict without the icon."""
    counts: str
    quiet: bool
    """Nothing changed that a reviewer must look at."""

    @property
    def title(self) -> str:
        return f"{self.icon} {self.text}"


def invalid_files(comparison: Comparison) -> list[str]:
    return sorted({d.file for d in comparison.diagnostics if d.is_error})


def cost_change(comparison: Comparison) -> str | None:
    """`+$0.0081 (+39.6 %)` for the whole run, None without a priced base."""
    base, head = comparison.totals.base, comparison.totals.head
    if not comparison.has_base or base is None or head is None \
            or base.total_cost_usd is None or head.total_cost_usd is None:
        return None
    return MoneyRow.of(base.total_cost_usd, head.total_cost_usd).change


def headline(comparison: Comparison, found: Sequence[Finding],
             fail_reasons: Sequence[str]) -> Headline:
    groups = Counter(f.group for f in found)
    invalid = invalid_files(comparison)
    parts = _lead(groups, invalid, found, fail_reasons, _calibration(comparison))
    cost = cost_change(comparison)
    if cost is not None and found:
        parts.append(f"cost {cost}")
    quiet = not invalid and not fail_reasons and not comparison.calibration and all(
        f.group in (Group.UNCHANGED, Group.STILL_FAILING) for f in found)
    icon = "❌" if fail_reasons else "⚠️" if (
        invalid or any(groups[g] for g in WARNING_GROUPS)) else "✅"
    return Headline(icon, " · ".join(parts), counts_line(comparison, found, invalid), quiet)


def _lead(groups: Counter[Group], invalid: list[str], found: Sequence[Finding],
          fail_reasons: Sequence[str], calibration: list[str]) -> list[str]:
    if invalid:
        count = len(invalid)
        lead = [f"{count} file{'' if count == 1 else 's'} could not run"]
    else:
        lead = []
    for group, one, many in _LEADS:
        if groups[group]:
            top = next(f for f in found if f.group is group)
            lead += [f"{groups[group]} {one if groups[group] == 1 else many}", _described(top)]
            return lead
    if lead:
        return lead
    if not found and calibration:
        return calibration
    if not found:
        return ["no eval suite or sample file changed"]
    failing = groups[Group.STILL_FAILING]
    if fail_reasons:
        return [f"check failed: {fail_reasons[0]}"]
    if groups[Group.INCONCLUSIVE]:  # e.g. evals a budget stopped (skipped)
        return [f"{groups[Group.INCONCLUSIVE]} inconclusive"]
    return ["no change" if not failing else f"no change ({failing} still failing)"]


def _calibration(comparison: Comparison) -> list[str]:
    """`2 sample files graded`, then the largest agreement change."""
    files = comparison.calibration
    if not files:
        return []
    lead = [f"{len(files)} sample file{'' if len(files) == 1 else 's'} graded"]
    moved = [f for f in files if f.agreement_delta]
    if moved:
        top = max(moved, key=lambda f: abs(f.agreement_delta or 0))
        before = top.base.agreement_percent if top.base else None
        after = top.head.agreement_percent if top.head else None
        if before is not None and after is not None:
            lead.append(f"{top.path} agreement {before:.0f} % → {after:.0f} %")
    return lead


def _described(finding: Finding) -> str:
    change = finding.change
    joined = f"{finding.name} {change}" if change.startswith("now ") else \
        f"{finding.name}: {change}"
    return joined


WORSE_COUNTS = ((Group.REGRESSION, "regressed"), (Group.LIKELY_REGRESSION, "likely regressed"),
                (Group.BROKEN, "broke"), (Group.LATER_TURN, "later turn"))
BETTER_COUNTS = ((Group.IMPROVEMENT, "improved"), (Group.FIXED, "fixed"),
                 (Group.EARLIER_TURN, "earlier turn"))
"""Worse and better changes, counted symmetrically: 🔴 for the one, 🟢 for the other."""


def counts_line(comparison: Comparison, found: Sequence[Finding], invalid: list[str]) -> str:
    """What changed, in non-zero counts only (worse 🔴 before better 🟢), then how many
    evals pass: "turncheck: 🔴 1 regressed · 🟢 2 fixed · 1 new · 7 of 9 evals pass"."""
    groups = Counter(f.group for f in found)
    new_failing = sum(1 for f in found if f.group is Group.NEW and "passes" not in f.change)
    flaky = sum(1 for f in found if f.flaky)
    worse = [f"🔴 {groups[g]} {label}" for g, label in WORSE_COUNTS if groups[g]]
    better = [f"🟢 {groups[g]} {label}" for g, label in BETTER_COUNTS if groups[g]]
    if worse:
        worse[0] = f"**{worse[0]}**"
    plain = [
        (groups[Group.NEW], f"{groups[Group.NEW]} new"
                            + (f" ({new_failing} failing)" if new_failing else "")),
        (groups[Group.REMOVED], f"{groups[Group.REMOVED]} removed"),
        (groups[Group.ERROR], f"{groups[Group.ERROR]} error{_plural(groups[Group.ERROR])}"),
        (flaky, f"{flaky} flaky"),
        (len(invalid), f"{len(invalid)} invalid file{_plural(len(invalid))}"),
    ]
    parts = [*worse, *better, *(text for count, text in plain if count)] or ["no changes"]
    counts = comparison.totals.counts
    if counts.evals:
        parts.append(f"{counts.passed} of {counts.evals} evals pass")
    if comparison.protocols is not None and comparison.protocols.counts.cases:
        cases = comparison.protocols.counts
        parts.append(f"{cases.passed} of {cases.cases} protocol cases pass")
    return "turncheck: " + " · ".join(parts)


def _plural(count: int) -> str:
    return "" if count == 1 else "s"
