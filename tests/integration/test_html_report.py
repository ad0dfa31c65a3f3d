"""The browsable HTML report (`turncheck report`, `run --html`, `compare --html`), opened in
headless Chromium (tests/support/browser.py) and checked for what a person sees: the filters hide
what does not match, a regression shows its base and head conversations side by side,
hostile model output stays text."""

from __future__ import annotations

import json
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.golden.test_comment_rendering import eval_result, many_evals, report, suite, turn
from tests.support.browser import with_display_state
from turncheck.cli.main import main
from turncheck.compare.comparison import compare_reports
from turncheck.render.html_report import render_report
from turncheck.report.run import Report

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

HOSTILE = ('<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"'
           '</script><a href="https://evil.example/">click me</a> https://evil.example/x')


@cache
def three_hundred_html() -> str:
    """Built once per session: several tests open the same page."""
    base, head = many_evals(300, 60, suites=20)
    return render_report(head=head, base=base, comparison=compare_reports(base, head))


def three_hundred(tmp_path: Path) -> Path:
    page = tmp_path / "report.html"
    page.write_text(three_hundred_html())
    return page


def hostile_pair() -> tuple[Report, Report]:
    good = eval_result("refund", [turn(1, "How long?", "Within 30 days.", True)])
    bad = eval_result("refund", [turn(1, "How long? " + HOSTILE, HOSTILE, False)])
    path = "evals/<b>x</b>.eval.yaml"
    return (report([suite(path, "s", [good])], "b" * 40),
            report([suite(path, "s", [bad])], "c" * 40))


def rows(browser: WebDriver) -> list[WebElement]:
    """The eval rows, each `is_displayed()` as of this call (read in one round trip)."""
    return with_display_state(browser, browser.find_elements("css selector", "#evals details.row"))


def choose(browser: WebDriver, filter_name: str, value: str) -> None:
    from selenium.webdriver.support.select import Select

    control = browser.find_element("css selector", f"#evals [data-filter='{filter_name}']")
    Select(control).select_by_value(value)


# -- in the browser ---------------------------------------------------------------------


def test_the_verdict_filter_hides_the_rows_that_do_not_match(
    tmp_path: Path, browser: WebDriver
) -> None:
    browser.get(three_hundred(tmp_path).as_uri())
    assert sum(row.is_displayed() for row in rows(browser)) == 300

    choose(browser, "verdict", "broken")

    shown = [row for row in rows(browser) if row.is_displayed()]
    assert len(shown) == 20
    assert {row.find_element("css selector", ".badge").text for row in shown} == {
        "broken"}
    assert browser.find_element("css selector", "#evals [data-shown]").text == "20 of 300 shown"

    choose(browser, "suite", "evals/suite3.eval.yaml")  # filters combine
    assert sum(row.is_displayed() for row in rows(browser)) == 1
    choose(browser, "verdict", "")
    assert sum(row.is_displayed() for row in rows(browser)) == 15


def test_search_and_status_filters(tmp_path: Path, browser: WebDriver) -> None:
    browser.get(three_hundred(tmp_path).as_uri())
    choose(browser, "status", "fail")
    assert sum(row.is_displayed() for row in rows(browser)) == 20
    choose(browser, "status", "")
    browser.find_element("css selector", "#evals [data-filter='text']").send_keys("eval 7.1")
    names = {row.find_element("css selector", ".name").text
             for row in rows(browser) if row.is_displayed()}
    assert names == {"eval 7.1", "eval 7.10", "eval 7.11", "eval 7.12", "eval 7.13",
                     "eval 7.14"}


def test_a_regressed_eval_shows_base_and_head_side_by_side(
    tmp_path: Path, browser: WebDriver
) -> None:
    browser.get(three_hundred(tmp_path).as_uri())
    row = next(r for r in rows(browser)
               if r.get_attribute("data-verdict") == "broken")
    base_turn = row.find_element("css selector", ".conversation .turn.base")
    assert not base_turn.is_displayed()  # closed until clicked

    row.find_element("css selector", "summary").click()

    head_turn = row.find_element("css selector", ".conversation .turn.head")
    assert base_turn.is_displayed() and head_turn.is_displayed()
    assert "base · turn 1" in base_turn.text and "head · turn 1" in head_turn.text
    assert "✓ match" in base_turn.text and "✗ match" in head_turn.text
    # Side by side: the same height on the page, base on the left.
    assert base_turn.location["y"] == head_turn.location["y"]
    assert base_turn.location["x"] + base_turn.size["width"] <= head_turn.location["x"]
    assert "tokens" not in base_turn.text or "in ·" in base_turn.text


def test_hostile_output_is_shown_as_text_and_runs_nothing(
    tmp_path: Path, browser: WebDriver
) -> None:
    base, head = hostile_pair()
    page = tmp_path / "hostile.html"
    page.write_text(render_report(head=head, base=base, comparison=compare_reports(base, head)))
    browser.get(page.as_uri())
    assert browser.title != "pwned"
    assert browser.find_elements("css selector", "main a, main img, main script") == []
    row = rows(browser)[0]
    row.find_element("css selector", "summary").click()
    head_turn = row.find_element("css selector", ".turn.head")
    assert '<a href="https://evil.example/">click me</a>' in head_turn.text
    assert "<b>x</b>" in row.find_element("css selector", ".suite").text


# -- the file itself --------------------------------------------------------------------


def test_the_page_loads_nothing_and_allows_only_its_own_script() -> None:
    base, head = hostile_pair()
    html = render_report(head=head, base=base, comparison=compare_reports(base, head))
    tags = start_tags(html)
    assert {name for name, _ in tags} <= SAFE_TAGS  # no img, a, iframe, link, script of theirs
    assert [name for name, _ in tags].count("script") == 1  # ours, at the end
    assert not [attrs for _, attrs in tags if {"src", "href", "style", "action"} & set(attrs)]
    policy = next(attrs["content"] for name, attrs in tags
                  if name == "meta" and attrs.get("http-equiv") == "Content-Security-Policy")
    assert policy is not None
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy


def test_one_run_shows_one_column_with_its_status_as_the_verdict() -> None:
    _, head = hostile_pair()
    html = render_report(head=head)
    assert 'class="one-sided"' in html and 'data-verdict="fail"' in html
    assert "<b>base</b>" not in html and "<b>run</b> · turn 1" in html


SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p",
             "span", "nav", "button", "section", "ul", "li", "code", "main", "form", "label",
             "select", "option", "input", "div", "details", "summary", "pre", "b", "script"}


def start_tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    class Collector(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, dict[str, str | None]]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append((tag, dict(attrs)))

    collector = Collector()
    collector.feed(html)
    return collector.tags


# -- the commands -----------------------------------------------------------------------


def write_reports(tmp_path: Path) -> tuple[Path, Path]:
    base, head = many_evals(30, 20, suites=2)
    paths = tmp_path / "base.json", tmp_path / "head.json"
    for path, side in zip(paths, (base, head), strict=True):
        path.write_text(side.model_dump_json())
    return paths


def test_report_of_a_run_and_its_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    base, head = write_reports(tmp_path)
    assert main(["report", str(head), "--base", str(base), "--out", str(tmp_path / "r.html")]
                ) == 0
    html = (tmp_path / "r.html").read_text()
    assert html.count('data-verdict="broken"') == 2
    assert "HTML report written to" in capsys.readouterr().err

    assert main(["report", str(head)]) == 0  # default: beside the report, one column
    assert 'class="one-sided"' in (tmp_path / "head.html").read_text()


def test_report_of_a_comparison_lists_verdicts_and_says_where_conversations_are(
    tmp_path: Path
) -> None:
    base, head = write_reports(tmp_path)
    assert main(["compare", str(base), str(head), "--json", str(tmp_path / "c.json"),
                 "--html", str(tmp_path / "compare.html")]) == 1  # the default gate: broken
    assert 'data-verdict="broken"' in (tmp_path / "compare.html").read_text()
    assert main(["report", str(tmp_path / "c.json")]) == 0
    html = (tmp_path / "c.html").read_text()
    assert html.count('data-verdict="broken"') == 2
    assert "has no conversations" in html


def test_report_of_the_actions_report_file(tmp_path: Path) -> None:
    base, head = many_evals(30, 20, suites=2)
    bundle = {"kind": "turncheck-report", "repository": "o/r", "event": "pull_request",
              "head_sha": "c" * 40, "head": json.loads(head.model_dump_json()),
              "base": json.loads(base.model_dump_json())}
    (tmp_path / "turncheck-report.json").write_text(json.dumps(bundle))
    assert main(["report", str(tmp_path / "turncheck-report.json")]) == 0
    html = (tmp_path / "turncheck-report.html").read_text()
    assert 'class="two-sided"' in html and "<b>base</b> · turn 1" in html


@pytest.mark.parametrize("content", ["not json", "{\"suites\": 3}", "[]"])
def test_a_bad_report_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    (tmp_path / "bad.json").write_text(content)
    assert main(["report", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turncheck: error: ") and err.count("\n") == 1
    assert not (tmp_path / "bad.html").exists()


def test_protocol_cases_and_sample_files_have_their_own_views(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).resolve().parents[2]
    page = tmp_path / "examples.html"
    main(["run", str(root / "examples"), "--quiet", "--html", str(page)])
    sections = {attrs.get("id"): attrs for name, attrs in start_tags(page.read_text())
                if name == "section" and "data-section" in attrs}
    assert set(sections) == {"evals", "cases", "samples"}
    html = page.read_text()
    cases = html.split('id="cases"', 1)[1].split('id="samples"', 1)[0]
    assert cases.count('<details class="row"') == 3  # the flow-gating protocol's cases
    assert "judge_scale" in cases  # each turn's scorers, as its checks
    samples = html.split('id="samples"', 1)[1]
    assert samples.count('<details class="row"') == 2  # both sample files, one row each
    assert samples.count('<details class="sample"') == 11  # their graded samples
    assert "grader score" in samples and "label " in samples
