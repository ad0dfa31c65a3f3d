"""The verdict in one line, and the counts under it: the comment's heading, the check
run's title and the step summary's first line are this same text."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from turncheck.compare.policy import FailOn
from turncheck.render.app_changes import app_cost_changed, headline_changes
from turncheck.render.severity import WORSE, Finding, Group, fails_check, fired
from turncheck.report.comparison import ComparedRow, Comparison
from turncheck.report.results import Status
from turncheck.report.rows import ComparedSide
from turncheck.text.counts import counted
from turncheck.text.money import MoneyRow

NAME_CHARS = 30
"""An eval's name in the heading is cut to this many characters."""
HEADING_CHARS = 118
"""The heading's length (icon aside) the detail is cut to fit, where it can."""
NAMED = 2
"""At most this many evals are named in the heading; the rest are counted."""

_LABELS = {
    Group.REGRESSION: ("regression", "regressions"), Group.BROKEN: ("broke", "broke"),
    Group.LIKELY_REGRESSION: ("likely regression", "likely regressions"),
    Group.LATER_TURN: ("later turn", "later turns"),
    Group.IMPROVEMENT: ("improvement", "improvements"), Group.FIXED: ("fixed", "fixed"),
    Group.EARLIER_TURN: ("earlier turn", "earlier turns"), Group.NEW: ("new", "new"),
    Group.REMOVED: ("removed", "removed"),
    Group.INCONCLUSIVE: ("inconclusive", "inconclusive"),
    Group.UNRELIABLE_BASELINE: ("unreliable baseline", "unreliable baselines"),
    Group.NOT_LIKE_FOR_LIKE: ("not like-for-like", "not like-for-like"),
}
CHANGES = (Group.NOT_LIKE_FOR_LIKE, Group.IMPROVEMENT, Group.FIXED, Group.EARLIER_TURN,
           Group.NEW, Group.REMOVED, Group.INCONCLUSIVE, Group.UNRELIABLE_BASELINE)
"""What heads a comment when nothing fails the check or warns, most important first."""
WARNING_GROUPS = (Group.ERROR, *WORSE, Group.NOT_RUN)


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


@dataclass(frozen=True)
class _Cause:
    summary: str
    """`2 regressions`"""
    detail: str | None = None
    """`refund-window now passes on turn 3 (was 1)`"""
    names: Sequence[str] = ()
    """`refund-window`, `tone`: the rows named instead of a detail."""

    def said(self, room: int) -> str | None:
        """The detail (or the names: two, else one) in about `room` characters."""
        if self.names:
            two = _names(self.names)
            return two if len(two) <= room else _names(self.names, 1)
        return None if self.detail is None else _short(self.detail, max(room, 20))


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
    """May I merge? What fails the check, most severe first (files that could not run,
    errors, regressions and broken evals, budget stops, cost alert, calibration) — else
    what warns, else the most important change — then one metric: evals passing
    base → head."""
    invalid = invalid_files(comparison)
    conditions = fired(fail_reasons)
    causes = _causes(comparison, found, invalid, conditions) if fail_reasons else []
    # Reasons made outside `fail_reasons` name no condition: what warns stands for them.
    causes = causes or _warnings(comparison, found, invalid)
    if fail_reasons and not causes:
        causes = [_Cause(f"check failed: {_short(fail_reasons[0], 60)}")]
    causes = causes or _change(comparison, found)
    summary, metric = ", ".join(c.summary for c in causes), _metric(comparison)
    # The detail gives way to keep the heading one short line.
    detail = causes[0].said(HEADING_CHARS - len(summary) - len(metric or "") - 6)
    parts = [part for part in (summary, detail, metric) if part]
    groups = Counter(f.group for f in found)
    quiet = not invalid and not fail_reasons and not comparison.calibration and all(
        f.group in (Group.UNCHANGED, Group.STILL_FAILING) for f in found) \
        and not headline_changes(comparison) and not app_cost_changed(comparison)
    icon = "❌" if fail_reasons else "⚠️" if (
        invalid or comparison.alert is not None or any(groups[g] for g in WARNING_GROUPS)) \
        else "✅"
    return Headline(icon, " · ".join(parts), counts_line(comparison, found, invalid), quiet)


def _causes(comparison: Comparison, found: Sequence[Finding], invalid: list[str],
            conditions: Sequence[FailOn]) -> list[_Cause]:
    """What fails the check, most severe first."""
    causes = []
    if FailOn.INVALID in conditions and invalid:
        causes.append(_invalid(invalid))
    failing = [f for f in found if fails_check(f, conditions)]
    errored = [f for f in failing if f.group is Group.ERROR]
    if errored:
        causes.append(_errors(errored))
    worse = [f for f in failing if f.group is not Group.ERROR]
    if worse:
        causes.append(_worse(worse, flaky_fails=FailOn.FLAKY in conditions))
    causes += _budget(comparison, found)
    if FailOn.COST in conditions and comparison.alert is not None:
        causes.append(_cost_alert(comparison))
    if FailOn.CALIBRATION in conditions:
        calibration = _calibration(comparison)
        causes.append(_Cause("grader calibration", calibration[-1] if calibration else None))
    if FailOn.LATENCY in conditions:
        causes += _latency(comparison)
    return causes


def _latency(comparison: Comparison) -> list[_Cause]:
    """`replies slower · support-bot median 193 → 494 ms`."""
    slower = [s for s in comparison.suites if s.latency is not None and s.latency.slower]
    if not slower:
        return []
    first = slower[0].latency
    assert first is not None
    return [_Cause(f"{counted(len(slower), 'app suite')} slower",
                   f"{slower[0].name} median {first.base.total_p50_ms:,.0f} → "
                   f"{first.head.total_p50_ms:,.0f} ms")]


def _warnings(comparison: Comparison, found: Sequence[Finding],
              invalid: list[str]) -> list[_Cause]:
    """What a reviewer must look at though it does not fail the check."""
    causes = [_invalid(invalid)] if invalid else []
    errored = [f for f in found if f.group is Group.ERROR]
    if errored:
        causes.append(_errors(errored))
    worse = [f for f in found if f.group in WORSE]
    if worse:
        causes.append(_worse(worse))
    causes += _budget(comparison, found)
    if comparison.alert is not None:
        causes.append(_cost_alert(comparison))
    return causes


def _cost_alert(comparison: Comparison) -> _Cause:
    change = cost_change(comparison)
    return _Cause("cost alert" if change is None else f"cost {change}")


def _invalid(invalid: list[str]) -> _Cause:
    count = len(invalid)
    return _Cause(f"{counted(count, 'file')} could not run", names=invalid)


def _errors(errored: Sequence[Finding]) -> _Cause:
    """`3 evals errored (not judged)`, with the commonest error."""
    kind = _kind(errored)
    commonest = Counter(_short(_hosts(f.error or f.change), 80)
                        for f in errored).most_common(1)
    summary = f"{counted(len(errored), kind)} errored (not judged)"
    if len(errored) == 1:
        return _Cause(summary, _short(f"{errored[0].name}: {commonest[0][0]}", 40))
    return _Cause(summary, commonest[0][0])


def _worse(worse: Sequence[Finding], flaky_fails: bool = False) -> _Cause:
    """`1 regression, 2 flaky · refund-window, tone`: counted by what each row is, most
    severe first, then named (a single row with what happened to it). When flakiness
    fails the check, every flaky row counts as flaky too, as the check's reasons and
    the counts line count it (a flaky regression is one of each)."""
    labels = Counter(_label(f) for f in worse)
    flaky = sum(1 for f in worse if f.flaky)
    if flaky_fails and flaky:
        labels["flaky"] = flaky
    ordered = sorted(worse, key=_severity)
    summary = ", ".join(f"{n} {_PLURALS.get(label, label) if n != 1 else label}"
                        for label, n in
                        sorted(labels.items(), key=lambda kv: _LABEL_ORDER.index(kv[0])))
    if len(worse) == 1:
        return _Cause(summary, _described(worse[0]))
    return _Cause(summary, names=[f.name for f in ordered])


_PLURALS = {"suite regression": "suite regressions", "regression": "regressions",
            "likely regression": "likely regressions", "later turn": "later turns",
            "earlier turn": "earlier turns"}
"""The labels that are nouns ("broke", "flaky", "failing" read the same for any count)."""

_LABEL_ORDER = ["suite regression", "regression", "regressions", "broke", "likely regression",
                "likely regressions", "later turn", "later turns", "flaky", "failing"]


def _label(finding: Finding) -> str:
    if finding.kind == "suite":
        return "suite regression"
    if finding.group in WORSE:
        return _LABELS[finding.group][0]
    return "flaky" if finding.flaky else "failing"


def _severity(finding: Finding) -> int:
    return _LABEL_ORDER.index(_label(finding))


def _budget(comparison: Comparison, found: Sequence[Finding]) -> list[_Cause]:
    stopped = [f for f in found if f.group is Group.NOT_RUN]
    if not stopped:
        return []
    evals = comparison.totals.counts.evals
    return [_Cause("budget stopped the run",
                   f"{len(stopped)} of {evals} evals not run" if evals
                   else f"{len(stopped)} not run")]


def _change(comparison: Comparison, found: Sequence[Finding]) -> list[_Cause]:
    """The most important change when nothing fails the check or warns."""
    groups = Counter(f.group for f in found)
    for group in CHANGES:
        if groups[group]:
            members = sorted((f for f in found if f.group is group),
                             key=lambda f: not f.head_failed)  # a failing new eval first
            one, many = _LABELS[group]
            summary = f"{groups[group]} {one if groups[group] == 1 else many}"
            failing = sum(f.head_failed for f in members)
            if group is Group.NEW and failing:
                summary += f" ({failing} failing)"
            if len(members) == 1:
                return [_Cause(summary, _described(members[0]))]
            return [_Cause(summary, names=[f.name for f in members])]
    calibration = _calibration(comparison)
    if not found and calibration:
        return [_Cause(calibration[0], calibration[1] if len(calibration) > 1 else None)]
    if not found:
        return [_Cause("no eval suite or sample file changed")]
    app = _app_change(comparison)
    if app is not None:
        return [app]
    failing = groups[Group.STILL_FAILING]
    return [_Cause("no change" if not failing else f"no change ({failing} still failing)")]


def _app_change(comparison: Comparison) -> _Cause | None:
    """What the app sent or did differently, and the cost, when no eval changed:
    `the app's model calls per turn 1 → 2 · cost +$0.0004 (+100.0 %)`."""
    changes = headline_changes(comparison)
    cost = cost_change(comparison) if app_cost_changed(comparison) else None
    if not changes and cost is None:
        return None
    summary = f"the app's {changes[0]}" if changes else "the app's cost changed"
    more = [f"{len(changes) - 2} more"] if len(changes) > 2 else []
    detail = ", ".join([*([f"cost {cost}"] if cost else []), *changes[1:2], *more])
    return _Cause(summary, detail or None)


def _metric(comparison: Comparison) -> str | None:
    """Codecov's one figure: `evals passing 285 → 284 of 300` (protocol cases when a PR
    has no evals); with repeats, the sample pass rate."""
    evals: Sequence[ComparedRow] = [e for s in comparison.suites for e in s.evals]
    cases: Sequence[ComparedRow] = [c for s in comparison.protocols.suites for c in s.cases] \
        if comparison.protocols is not None else []
    noun, rows = ("evals", evals) if evals else ("protocol cases", cases)
    if any(side is not None and side.samples + side.errored + side.skipped > 1
           for row in rows for side in (row.base, row.head)):
        return _sample_rate([row.base for row in rows if row.base is not None],
                            [row.head for row in rows if row.head is not None])
    if rows:
        return _passing(noun, [(row.base_status, row.head_status) for row in rows])
    return None


def _sample_rate(base: Sequence[ComparedSide], head: Sequence[ComparedSide]) -> str | None:
    """With repeats, the share of usable samples that passed: `sample pass rate 95% → 75%`
    (a row's pass/fail status hides most of what its samples say)."""
    def rate(sides: Sequence[ComparedSide]) -> float | None:
        samples = sum(s.samples for s in sides)
        return sum(s.passes for s in sides) / samples if samples else None

    before, after = rate(base), rate(head)
    if after is None:
        return None
    if before is None:
        return f"sample pass rate {after:.0%}"
    return f"sample pass rate {before:.0%} → {after:.0%}"


def _passing(kind: str, statuses: Sequence[tuple[Status | None, Status | None]]) -> str:
    based = [b for b, _ in statuses if b is not None]
    headed = [h for _, h in statuses if h is not None]
    after = _count(sum(h is Status.PASS for h in headed))
    if not based:
        return f"{kind} passing {after} of {len(headed)}"
    before = _count(sum(b is Status.PASS for b in based))
    if all(b is not None and h is not None for b, h in statuses):  # the same rows
        return f"{kind} passing {before} → {after} of {len(headed)}"
    return f"{kind} passing {before} of {len(based)} → {after} of {len(headed)}"


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
            lead.append(f"{_short(top.path)} agreement {before:.0f} % → {after:.0f} %")
    return lead


def _described(finding: Finding) -> str:
    name = _short(finding.name)
    change = finding.change
    if finding.kind == "suite":
        return f"{name} {change.split(' on average')[0]}"
    # The heading's summary already says "new" or "not like-for-like".
    change = change.removeprefix("new: ").removeprefix("not like-for-like: ")
    return f"{name} {change}" if change.startswith("now ") else f"{name}: {change}"


def _hosts(text: str) -> str:
    """URLs cut to their host: the heading has no room for (or links to) a path."""
    return _URL.sub(r"\1", text)


_URL = re.compile(r"https?://([^/\s]+)\S*")


def _names(names: Sequence[str], named: int = NAMED) -> str:
    shown = ", ".join(_short(n) for n in names[:named])
    more = len(names) - named
    return shown if more <= 0 else f"{shown} and {more} more"


def _short(text: str, limit: int = NAME_CHARS) -> str:
    """`text` in at most `limit` characters, cut after a whole word ("no verdict on
    the…", never "the a…") unless its first word alone is longer."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if flat[limit - 1] != " " and " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:·") + "…"


def _kind(found: Sequence[Finding]) -> str:
    return "protocol case" if all(f.kind == "case" for f in found) else "eval"


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
    worse = [f"🔴 {groups[g]} {_PLURALS.get(label, label) if groups[g] != 1 else label}"
             for g, label in WORSE_COUNTS if groups[g]]
    better = [f"🟢 {groups[g]} {_PLURALS.get(label, label) if groups[g] != 1 else label}"
              for g, label in BETTER_COUNTS if groups[g]]
    if worse:
        worse[0] = f"**{worse[0]}**"
    plain = [
        (groups[Group.NEW], f"{groups[Group.NEW]} new"
                            + (f" ({new_failing} failing)" if new_failing else "")),
        (groups[Group.REMOVED], f"{groups[Group.REMOVED]} removed"),
        (groups[Group.ERROR], counted(groups[Group.ERROR], "error")),
        (groups[Group.NOT_RUN], f"{groups[Group.NOT_RUN]} not run (budget)"),
        (groups[Group.NOT_LIKE_FOR_LIKE],
         f"{groups[Group.NOT_LIKE_FOR_LIKE]} not like-for-like (simulated user changed)"),
        (flaky, f"{flaky} flaky"),
        (len(invalid), counted(len(invalid), "invalid file")),
    ]
    parts = [*worse, *better, *(text for count, text in plain if count)] or [
        "no eval changed" if headline_changes(comparison) else "no changes"]
    counts = comparison.totals.counts
    if counts.evals:
        parts.append(f"{_count(counts.passed)} of {counts.evals} evals pass")
    if comparison.protocols is not None and comparison.protocols.counts.cases:
        cases = comparison.protocols.counts
        parts.append(f"{_count(cases.passed)} of {cases.cases} protocol cases pass")
    return "turncheck: " + " · ".join(parts)


def _count(count: int) -> str:
    return "none" if count == 0 else str(count)
