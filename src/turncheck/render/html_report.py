"""The browsable HTML report: one self-contained file built from the JSON report(s).

Sources, all optional but one side: the head run report, the base run report and the
comparison of the two (computed by the caller, or read from `compare --json`). Without
a comparison every row's verdict is its head status; without run reports there are no
conversations, only the verdicts.

Everything shown comes from the PR (suite text, model output) and is hostile: the page
is rendered by the sandboxed, always-autoescaping environment (`text.html_environment`),
values are never marked safe, no link is built from a value, and a Content-Security-Policy
allows only the page's own inline style and script (by hash): no network, no other script.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from importlib.resources import files

from markupsafe import Markup

from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, FailOn, fail_reasons
from turncheck.render.app_calls import calls_change, calls_in_turns
from turncheck.render.app_changes import change_views, changed_app_suites
from turncheck.render.headline import Headline, headline
from turncheck.render.html_kinds import KINDS
from turncheck.render.html_rows import kind_rows
from turncheck.render.html_turns import change_view, cost_text
from turncheck.render.html_views import (
    AppChangeLine,
    AppChangesView,
    AppSuiteView,
    BannerView,
    ReportView,
    SectionView,
)
from turncheck.render.latency import latency_rows
from turncheck.render.prompt_changes import SUMMARY_DIFF_LINES, DiffBudget
from turncheck.render.severity import Group, findings
from turncheck.report.comparison import Comparison
from turncheck.report.run import Report
from turncheck.report.spend import Spend
from turncheck.text.environment import html_environment, render_template


def app_changes_views(comparison: Comparison | None) -> list[AppChangesView]:
    if comparison is None:
        return []
    budget = DiffBudget()
    return [AppChangesView(suite.name, suite.path, [
        AppChangeLine(view.line, None if view.prompt is None else change_view(view.prompt))
        for view in change_views(suite, SUMMARY_DIFF_LINES, budget)])
        for suite in changed_app_suites(comparison)]


# -- app targets' own model calls --------------------------------------------------------


def _two(base: str | None, head: str | None) -> str:
    if base is None or head is None or base == head:
        return head if head is not None else base or "–"
    return f"{base} → {head}"


def _spend_view(name: str, path: str, calls: str, base: Spend | None,
                head: Spend | None) -> AppSuiteView:
    def each(read: str) -> str:
        texts = [None if s is None else
                 f"{getattr(s, read):,}" if read.endswith("tokens") else cost_text(getattr(s, read))
                 for s in (base, head)]
        return _two(*texts)

    return AppSuiteView(name=name, path=path, calls=calls, app_tokens=each("tokens"),
                        app_cost=each("cost_usd"), own_tokens=each("judge_tokens"),
                        own_cost=each("judge_cost_usd"))


def app_suites(comparison: Comparison | None, base: Report | None,
               head: Report | None) -> list[AppSuiteView]:
    """Each app-target suite's model calls, tokens and cost, and turncheck's own (the
    judge's) apart: the comparison's `app_calls` and totals when there is one, else the
    one run's."""
    if comparison is not None:
        return [_spend_view(s.name, s.path, calls_change(s.app_calls), s.totals.base,
                            s.totals.head)
                for s in comparison.suites if s.app_calls is not None]
    side = head if head is not None else base
    suites = side.suites if side is not None else []
    return [_spend_view(s.name, s.path, calls_in_turns(*found), None, s.spend)
            for s in suites if (found := s.app_calls())]


# -- the page ---------------------------------------------------------------------------


def _facts(comparison: Comparison | None, base: Report | None, head: Report | None
           ) -> list[str]:
    facts = []
    side = head or base
    if side is not None:
        facts.append(f"{side.mode} mode")
        facts.append(f"turncheck {side.turncheck_version}")
    commits = [f"{name} {report.commit[:12]}" for name, report in (("base", base), ("head", head))
               if report is not None and report.commit]
    facts.extend(commits)
    if comparison is not None:
        totals = comparison.totals
        facts.append(f"cost {cost_text(totals.base.total_cost_usd) if totals.base else '–'}"
                     f" → {cost_text(totals.head.total_cost_usd if totals.head else None)}")
    elif head is not None:
        facts.append(f"cost {cost_text(head.totals.cost_usd, head.totals.judge_cost_usd)}")
    return facts


def _diagnostics(comparison: Comparison | None, head: Report | None,
                 errors: bool) -> list[str]:
    """The validation errors (`errors`), else the warnings, one line each."""
    found = comparison.diagnostics if comparison is not None else \
        head.diagnostics if head is not None else []
    return [d.compiler_style() for d in found if d.is_error == errors]


_TONE = {"❌": "fail", "⚠️": "warn"}


def banner(comparison: Comparison | None, head: Report | None,
           reasons: Sequence[str] | None) -> BannerView | None:
    """The comment's heading and counts. `reasons`: why the check fails (None: under the
    default `fail-on`). A run alone is read as a comparison with no base, without calling
    every row new: what it has to say is what errored and how many pass."""
    if comparison is None:
        return None if head is None else _run_banner(head, reasons)
    if reasons is None:
        reasons = fail_reasons(comparison, DEFAULT_FAIL_ON)
    return _banner(headline(comparison, findings(comparison), reasons))


def _run_banner(head: Report, reasons: Sequence[str] | None) -> BannerView:
    # With nothing to compare with, a failing eval is the news (not "new"), so the
    # default gate is read with `failure` added.
    comparison = compare_reports(None, head)
    found = [f for f in findings(comparison) if f.group is not Group.NEW]
    if reasons is None:
        reasons = fail_reasons(comparison, (*DEFAULT_FAIL_ON, FailOn.FAILURE))
    top = headline(comparison, found, reasons)
    return _banner(replace(top, counts=top.counts.replace("no changes · ", "")))


def _banner(top: Headline) -> BannerView:
    # The counts' only markup is the comment's bold on the worst count.
    return BannerView(icon=top.icon, text=top.text, counts=top.counts.replace("**", ""),
                      tone=_TONE.get(top.icon, "ok"))


def _replayed(base: Report | None, head: Report | None) -> frozenset[str]:
    sides = {name for name, report in (("base", base), ("head", head))
             if report is not None and report.mode == "replay"}
    one = head if head is not None else base
    if one is not None and one.mode == "replay":
        sides.add("run")
    return frozenset(sides)


def build_view(*, head: Report | None, base: Report | None = None,
               comparison: Comparison | None = None,
               reasons: Sequence[str] | None = None,
               why_ran: Mapping[str, Sequence[str]] | None = None) -> ReportView:
    """`reasons`: why the check fails, for the verdict banner (None: the default gate);
    `why_ran`: suite path → why it ran although its own file did not change."""
    no_runs = head is None and base is None
    note = ("This comparison file has no conversations: pass the run reports "
            "(`turncheck report HEAD.json --base BASE.json`) to see them.") if no_runs else None
    sections = [SectionView(kind.section, kind.title, kind_rows(kind, comparison, base, head),
                            note if kind is KINDS[0] else None) for kind in KINDS]
    title = "turncheck report" + (": base → head" if (base and head) or comparison else "")
    return ReportView(title=title, facts=_facts(comparison, base, head),
                      sections=[s for s in sections if s.rows or s.note],
                      diagnostics=_diagnostics(comparison, head, errors=True),
                      warnings=_diagnostics(comparison, head, errors=False),
                      two_sided=base is not None or bool(comparison and comparison.has_base),
                      banner=banner(comparison, head, reasons), replayed=_replayed(base, head),
                      app_suites=app_suites(comparison, base, head),
                      app_changes=app_changes_views(comparison),
                      latency=latency_rows(comparison) if comparison is not None else [],
                      ran_because=[(path, "; ".join(why))
                                   for path, why in sorted((why_ran or {}).items())])


def _asset(name: str) -> str:
    return (files("turncheck.render") / "templates" / name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_html(view: ReportView) -> str:
    style, script = _asset("report.css"), _asset("report.js")
    policy = (f"default-src 'none'; style-src {_csp_hash(style)}; "
              f"script-src {_csp_hash(script)}; img-src data:; base-uri 'none'; "
              "form-action 'none'")
    # Our own constant assets, not report content: the only values marked safe.
    return render_template(_ENVIRONMENT, "report.html.j2", view=view, style=Markup(style),
                           script=Markup(script), policy=policy)


def render_report(*, head: Report | None, base: Report | None = None,
                  comparison: Comparison | None = None,
                  reasons: Sequence[str] | None = None,
                  why_ran: Mapping[str, Sequence[str]] | None = None) -> str:
    """`reasons`: why the check fails (`compare.policy.fail_reasons`), for the verdict
    banner; None reads the comparison under the default `fail-on`. `why_ran`: suite path
    → why it ran (a file it watches changed)."""
    return render_html(build_view(head=head, base=base, comparison=comparison,
                                  reasons=reasons, why_ran=why_ran))


_ENVIRONMENT = html_environment()
