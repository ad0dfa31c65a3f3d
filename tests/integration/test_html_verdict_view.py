"""Issue 33, items 2 and 6: the HTML report leads with the comment's verdict, orders rows
by severity, styles `broken` like a regression and `fixed` like a good change, says each
label once, hides the recording's latencies in replay mode, names the suite by its
declared name (and finds rows by it), and keeps warnings apart from what could not run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tests.golden.test_comment_rendering import eval_result, report, suite, turn
from turncheck.compare.comparison import compare_reports
from turncheck.compare.policy import DEFAULT_FAIL_ON, fail_reasons
from turncheck.diagnostics import Diagnostic, Severity
from turncheck.render.comment import comment_headline
from turncheck.render.html_report import render_report
from turncheck.report.results import CheckResult
from turncheck.report.run import Report

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

PATH = "evals/welcome.eval.yaml"
NAME = "support-greeting"


def pair(diagnostics: list[Diagnostic] | None = None) -> tuple[Report, Report]:
    """`steady` passes on both sides, `mended` is fixed, `hello` broke (in that order)."""
    def evals(broken: bool) -> list:  # type: ignore[type-arg]
        return [
            eval_result("steady", [turn(1, "Hi", "Hello!", True)]),
            eval_result("mended", [turn(1, "Name?", "Ada" if broken else "?", broken)]),
            eval_result("hello", [turn(1, "Greet", "Hello" if not broken else "Go away",
                                       not broken)]),
        ]
    return (report([suite(PATH, NAME, evals(False))], "b" * 40),
            report([suite(PATH, NAME, evals(True))], "c" * 40, diagnostics))


def page(base: Report, head: Report) -> str:
    return render_report(head=head, base=base, comparison=compare_reports(base, head))


def badge_words(html: str) -> list[str]:
    return re.findall(r'<span class="badge" data-word="([a-z-]+)">', html)


def test_the_page_leads_with_the_comments_verdict() -> None:
    base, head = pair()
    comparison = compare_reports(base, head)
    heading = comment_headline(comparison, fail_reasons(comparison, DEFAULT_FAIL_ON))
    html = page(base, head)
    banner = re.search(r'<div class="banner (\w+)" data-banner><p class="verdict">([^<]*)</p>',
                       html)
    assert banner is not None
    assert banner.group(2) == heading.title.replace('"', "&#34;")
    assert banner.group(1) == "fail" and heading.icon == "❌"
    assert html.index("data-banner") < html.index('class="rows"')


def test_rows_are_ordered_by_severity_and_broken_and_fixed_are_styled() -> None:
    base, head = pair()
    html = page(base, head)
    assert badge_words(html) == ["broken", "fixed", "unchanged"]
    style = html[html.index("<style>"):html.index("</style>")]
    red = re.search(r'([^{}]*)\{ color: #fff; background: var\(--bad\)', style)
    green = re.search(r'([^{}]*)\{ color: #fff;\s*background: var\(--ok\)', style)
    assert red is not None and '[data-word="broken"]' in red.group(1)
    assert '[data-word="regression"]' in red.group(1)
    assert green is not None and '[data-word="fixed"]' in green.group(1)


def test_no_label_is_said_twice() -> None:
    steady = eval_result("steady", [turn(1, "Hi", "Hello!", True, check_detail="match")])
    steady.turns[0].checks.append(
        CheckResult(type="min_tokens", passed=True, detail="min_tokens 5"))
    base = report([suite(PATH, NAME, [])], "b" * 40)
    head = report([suite(PATH, NAME, [steady])], "c" * 40)
    html = page(base, head)
    for doubled in ("new: new", "match: match", "min_tokens: min_tokens"):
        assert doubled not in html
    assert "✓ min_tokens 5" in html
    broke_base, broke_head = pair()
    text = re.sub(r"<[^>]+>", " ", page(broke_base, broke_head))
    assert not re.search(r"\bbroken\s*:?\s+broken\b", text)
    assert not re.search(r"\bunchanged\s+unchanged\b", text)


def test_replayed_latencies_are_not_shown() -> None:
    base, head = pair()
    for turn_result in head.suites[0].evals[0].turns:
        turn_result.latency_ms = 78_399.0
    assert head.mode == "replay"
    assert "78,399 ms" not in page(base, head)
    live = head.model_copy(update={"mode": "live"})
    assert "78,399 ms" in render_report(head=live)


def test_warnings_are_apart_and_quiet_errors_stay_problems() -> None:
    warning = Diagnostic(file=PATH, line=3, column=3, severity=Severity.WARNING,
                         code="unknown-key",
                         message='unknown metadata key "mcp_server" is ignored')
    base, head = pair([warning])
    html = page(base, head)
    assert "Validation problems" not in html
    warnings = html[html.index('<section class="warnings">'):]
    assert "mcp_server" in warnings[:warnings.index("</section>")]
    error = Diagnostic(file=PATH, line=9, column=1, severity=Severity.ERROR, code="bad",
                       message="checks must be a list")
    base, head = pair([warning, error])
    html = page(base, head)
    problems = html[html.index('<section class="diagnostics">'):]
    problems = problems[:problems.index("</section>")]
    assert "checks must be a list" in problems and "mcp_server" not in problems


def test_the_suite_name_is_shown_and_the_search_finds_it(
    tmp_path: Path, browser: WebDriver,
) -> None:
    base, head = pair()
    other = suite("evals/other.eval.yaml", "billing", [
        eval_result("invoice", [turn(1, "Bill?", "Paid", True)])])
    base.suites.append(other)
    head.suites.append(other)
    file = tmp_path / "report.html"
    file.write_text(page(base, head), encoding="utf-8")
    browser.get(file.as_uri())
    first = browser.find_element("css selector", "#evals details.row .suite")
    assert NAME in first.text and PATH in first.text
    browser.find_element("css selector", "#evals [data-filter='text']").send_keys("support-greet")
    from tests.support.browser import with_display_state

    rows = with_display_state(browser, browser.find_elements("css selector",
                                                             "#evals details.row"))
    shown = {r.find_element("css selector", ".name").text for r in rows if r.is_displayed()}
    assert shown == {"steady", "mended", "hello"}


def test_a_run_alone_is_not_called_new_and_its_failures_head_it() -> None:
    _, head = pair()
    html = render_report(head=head)
    banner = html[html.index("data-banner"):]
    banner = banner[:banner.index("</div>")]
    assert "❌" in banner and "1 failed eval" in banner and "2 of 3 evals pass" in banner
    assert "new" not in banner and "no changes" not in banner
