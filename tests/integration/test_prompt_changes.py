"""What the reviewer sees when the head sent something different from the base: a turn's
prompt, the system prompt, the tools. The comment's transcript (and the HTML report)
must put each side's prompt with that side's answer and show long changes as a diff,
without adding anything when nothing changed, and keep hostile prompt text inert.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.golden.test_comment_rendering import (
    assert_inert,
    comment_for,
    eval_result,
    gfm_html,
    report,
    split_code_blocks,
    suite,
    tables,
    turn,
)
from turncheck.compare.comparison import compare_reports
from turncheck.render.comment import render_summary
from turncheck.render.html_report import render_report
from turncheck.report.run import EvalResult, Report

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

PATH = "evals/capital.eval.yaml"
BASE_FOLLOW_UP = "Now answer in one word."
HEAD_FOLLOW_UP = "Now answer in French, please."
LONG_SYSTEM = "\n".join(f"Rule {n}: be concise and polite." for n in range(1, 31))
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


@dataclass(frozen=True)
class Side:
    """One side's eval, and what its suite sent (`system_prompt`, `tools`)."""

    result: EvalResult
    suite_fields: dict[str, Any]


def capital(follow_up: str, second_answer: str, passed: bool, **suite_fields: Any) -> Side:
    result = eval_result("capital", [turn(1, "What is the capital of France?", "Paris?", False),
                                     turn(2, follow_up, second_answer, passed)])
    return Side(result, suite_fields)


def side_report(side: Side, commit: str) -> Report:
    return report([suite(PATH, "capitals", [side.result]).model_copy(update=side.suite_fields)],
                  commit)


def reports(base: Side, head: Side) -> tuple[Report, Report]:
    return side_report(base, "b" * 40), side_report(head, "c" * 40)


def transcript_table(prose: str) -> list[str]:
    [table] = [t for t in tables(prose) if t[0].startswith("| Turn | Prompt |")]
    return table


def test_a_changed_turn_prompt_sits_with_its_own_sides_answer() -> None:
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True),
                         capital(HEAD_FOLLOW_UP, "Je ne sais pas", False))
    body, comparison, context = comment_for(base, head, ["1 regression against base"])
    prose, _ = assert_inert(body)
    rows = transcript_table(prose)[2:]
    assert len(rows) == 3  # turn 1 once, turn 2 once per side
    assert "What is the capital of France?" in rows[0] and rows[0].startswith("| 1 |")
    base_row, head_row = rows[1], rows[2]
    cells = [[c.strip() for c in r.strip("|").split(" | ")] for r in (base_row, head_row)]
    # | Turn | Prompt | base | head |: the base's prompt beside the base's answer only.
    assert cells[0][0] == "2 · base" and "one word" in cells[0][1]
    assert "Paris" in cells[0][2] and cells[0][3] == ""
    assert cells[1][0] == "2 · head" and "French" in cells[1][1]
    assert cells[1][2] == "" and "Je ne sais pas" in cells[1][3]
    # The step summary's full answers say which prompt each answer was given.
    summary = render_summary(comparison, context)
    _, blocks = assert_inert(summary, limit=None)
    contents = [b.content for b in blocks]
    assert contents.index(BASE_FOLLOW_UP) < contents.index("Paris") \
        < contents.index(HEAD_FOLLOW_UP) < contents.index("Je ne sais pas")


def test_unchanged_prompts_are_shown_once_without_change_notes() -> None:
    same = {"system_prompt": LONG_SYSTEM, "tools": [WEATHER_TOOL]}
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, **same),
                         capital(BASE_FOLLOW_UP, "Lyon", False, **same))
    body, comparison, context = comment_for(base, head)
    prose, blocks = assert_inert(body)
    assert [r.split(" | ")[0] for r in transcript_table(prose)[2:]] == ["| 1", "| 2"]
    assert "changed**" not in prose and "✏️" not in body and not blocks
    assert "Rule 1" not in body and "get_weather" not in body
    assert "✏️" not in render_summary(comparison, context)


def diff_blocks(markdown: str) -> list[str]:
    _, blocks = split_code_blocks(markdown)
    return [b.content for b in blocks if b.content.startswith("@@")]


def test_a_long_system_prompt_change_shows_as_a_diff() -> None:
    edited = LONG_SYSTEM.replace("Rule 17: be concise", "Rule 17: be verbose")
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, system_prompt=LONG_SYSTEM),
                         capital(BASE_FOLLOW_UP, "Lyon", False, system_prompt=edited))
    body, _, _ = comment_for(base, head)
    prose, _ = assert_inert(body)
    assert "**✏️ System prompt changed**" in prose
    [diff] = diff_blocks(body)
    assert "-Rule 17: be concise and polite." in diff.split("\n")
    assert "+Rule 17: be verbose and polite." in diff.split("\n")
    assert "Rule 1:" not in diff  # context only around the change, not the whole prompt
    assert "```diff" in body  # GitHub colours it


def test_a_suite_wide_change_is_diffed_once_and_referred_to_after() -> None:
    edited = LONG_SYSTEM.replace("Rule 17: be concise", "Rule 17: be verbose")
    sides = []
    for system, passed in ((LONG_SYSTEM, True), (edited, False)):
        evals = [eval_result(name, [turn(1, "Capital of France?", "Paris", passed)])
                 for name in ("first", "second")]
        sides.append(suite(PATH, "capitals", evals).model_copy(
            update={"system_prompt": system}))
    base, head = report([sides[0]], "b" * 40), report([sides[1]], "c" * 40)
    body, _, _ = comment_for(base, head)
    prose, _ = assert_inert(body)
    assert len(diff_blocks(body)) == 1 and prose.count("**✏️ System prompt changed**") == 2
    assert "**✏️ System prompt changed**: the same change as in first above" in prose


def test_a_short_system_prompt_change_shows_both_texts() -> None:
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, system_prompt="Be brief."),
                         capital(BASE_FOLLOW_UP, "Lyon", False))
    body, _, _ = comment_for(base, head)
    prose, _ = assert_inert(body)
    change = prose.split("**✏️ System prompt changed**", 1)[1].split("| Turn |", 1)[0]
    assert "- base: Be brief." in change and "- head: _(none)_" in change


def test_a_tools_change_names_the_tools_and_diffs_the_definitions() -> None:
    lookup = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    described = json.loads(json.dumps(WEATHER_TOOL))
    described["function"]["description"] = "Weather for a city, in Celsius"
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, tools=[WEATHER_TOOL, lookup]),
                         capital(BASE_FOLLOW_UP, "Lyon", False, tools=[described]))
    body, _, _ = comment_for(base, head)
    prose, _ = assert_inert(body)
    assert "**✏️ Tools changed**: removed lookup; changed get\\_weather" in prose
    [diff] = diff_blocks(body)
    assert '+      "description": "Weather for a city, in Celsius",' in diff.split("\n")


HOSTILE_FOLLOW_UP = ("Ignore this </details><!-- @org/team #1 https://evil.example/x\n"
                     "```` four backticks\n| a | b |\n" + "more text. " * 30)


def test_hostile_text_in_a_changed_prompt_stays_inert() -> None:
    hostile_system = HOSTILE_FOLLOW_UP + "\n" + LONG_SYSTEM
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, system_prompt=LONG_SYSTEM),
                         capital(HOSTILE_FOLLOW_UP, "Lyon", False, system_prompt=hostile_system,
                                 tools=[{"type": "function", "function": {
                                     "name": "x</details>@user"}}]))
    body, comparison, context = comment_for(base, head)
    for markdown in (body, render_summary(comparison, context)):
        prose, _ = assert_inert(markdown, limit=None)
        assert "</details><!--" not in prose and "```` four" not in prose
        html = gfm_html(markdown)
        assert re.findall(r'<a href="([^"]*)"', html) == [
            "https://github.com/octo-org/widgets/actions/runs/1"]
        # The diff of the long prompt is there, in a code block it cannot close.
        assert any("+```` four backticks" in d for d in diff_blocks(markdown))


def test_a_huge_prompt_change_gives_a_bounded_diff_that_says_it_was_cut() -> None:
    from turncheck.render.prompt_changes import COMMENT_DIFF_LINES, text_diff

    before = "\n".join(f"line {n}" for n in range(50_000))
    after = "\n".join(f"LINE {n}" for n in range(50_000))
    diff = text_diff(before, after, COMMENT_DIFF_LINES)
    assert len(diff.lines) == COMMENT_DIFF_LINES and diff.cut_lines > 0 and diff.cut_chars
    assert "not shown" in diff.note and "first 20,000 characters" in diff.note
    base, head = reports(capital(before, "Paris", True), capital(after, "Lyon", False))
    body, _, _ = comment_for(base, head)
    assert_inert(body)
    assert "more diff lines not shown" in body and len(body) < 20_000


def many_lines(tag: str) -> str:
    return "\n".join(f"{tag} line {n} " + "x" * 150 for n in range(100))


def test_many_long_changes_keep_every_transcript_in_the_comment() -> None:
    # Eight suites whose system prompt and every turn's long prompt changed: all diffs
    # in full would be ~110 kB, and the comment would drop every transcript to fit.
    sides: list[list[Any]] = [[], []]
    for k in range(8):
        for index, (tag, passed) in enumerate((("b", True), ("h", False))):
            turns = [turn(t, many_lines(f"{tag}{k}{t}"), "ok" if passed else "no",
                          passed and t == 3) for t in (1, 2, 3)]
            sides[index].append(suite(f"evals/s{k}.eval.yaml", f"s{k}",
                                      [eval_result("e", turns)]).model_copy(
                update={"system_prompt": many_lines(f"s{tag}{k}")}))
    base, head = report(sides[0], "b" * 40), report(sides[1], "c" * 40)
    body, comparison, context = comment_for(base, head)
    assert_inert(body)
    assert body.count("<details><summary>🔴") == 6  # TRANSCRIPT_CAP: none dropped
    assert sum(len(d.split("\n")) for d in diff_blocks(body)) <= 96
    assert "changed**: the diff is in the step summary" in body
    summary = render_summary(comparison, context)
    assert len(diff_blocks(summary)) == 8 * (1 + 3)


def test_the_html_report_shows_both_prompts_and_the_setup_change(tmp_path: Path) -> None:
    edited = LONG_SYSTEM.replace("Rule 17: be concise", "Rule 17: be verbose")
    base, head = reports(
        capital(BASE_FOLLOW_UP, "Paris", True, system_prompt=LONG_SYSTEM),
        capital(HOSTILE_FOLLOW_UP, "Lyon", False, system_prompt=edited, tools=[WEATHER_TOOL]))
    page = render_report(head=head, base=base)
    changes = page.split('class="changes"', 1)[1].split('data-conversation', 1)[0]
    assert "System prompt changed" in changes and "Tools changed" in changes
    assert '<span class="del">-Rule 17: be concise and polite.</span>' in changes
    assert '<span class="add">+Rule 17: be verbose and polite.</span>' in changes
    assert "added get_weather" in changes
    conversation = page.split("data-conversation", 1)[1]
    assert "prompt changed" in conversation
    assert BASE_FOLLOW_UP in conversation
    # Hostile prompt text is escaped, never markup.
    assert "</details><!-- @org" not in page
    assert "&lt;/details&gt;&lt;!-- @org/team" in page


def test_in_the_browser_each_side_shows_its_own_prompt_and_the_diff(
    tmp_path: Path, browser: WebDriver
) -> None:
    from tests.integration.test_html_report import SAFE_TAGS, start_tags

    edited = LONG_SYSTEM.replace("Rule 17: be concise", "Rule 17: be verbose")
    base, head = reports(
        capital(BASE_FOLLOW_UP, "Paris", True, system_prompt=LONG_SYSTEM),
        capital(HOSTILE_FOLLOW_UP, "Je ne sais pas", False, system_prompt=edited))
    html = render_report(head=head, base=base, comparison=compare_reports(base, head))
    assert {name for name, _ in start_tags(html)} <= SAFE_TAGS
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    browser.get(page.as_uri())
    row = browser.find_element("css selector", "#evals details.row")
    row.find_element("css selector", "summary").click()
    base_turn, head_turn = (row.find_elements("css selector", f".conversation .turn.{side}")[1]
                            for side in ("base", "head"))
    assert "prompt changed" in base_turn.text and "prompt changed" in head_turn.text
    assert BASE_FOLLOW_UP in base_turn.text and "Paris" in base_turn.text
    assert "French" not in base_turn.text and "Je ne sais pas" not in base_turn.text
    assert "</details><!-- @org/team #1" in head_turn.text and "Je ne sais pas" in head_turn.text
    assert base_turn.location["y"] == head_turn.location["y"]  # side by side
    system = row.find_element("css selector", ".changes .change")
    assert system.is_displayed() and "System prompt changed" in system.text
    assert "+Rule 17: be verbose and polite." in system.text
    assert row.find_elements("css selector", "a, img, script") == []


def test_the_html_report_adds_nothing_when_nothing_changed() -> None:
    same = {"system_prompt": LONG_SYSTEM, "tools": [WEATHER_TOOL]}
    base, head = reports(capital(BASE_FOLLOW_UP, "Paris", True, **same),
                         capital(BASE_FOLLOW_UP, "Lyon", False, **same))
    page = render_report(head=head, base=base)
    assert 'class="changes"' not in page and "prompt changed" not in page


# ---- the report records what each side sent ---------------------------------------------


def test_the_report_records_the_system_prompt_and_tools_as_sent(tmp_path: Path) -> None:
    from tests.support.engine_helpers import run_paths, write_suite
    from tests.support.scripted_server import ScriptedServer
    from tests.support.tool_agent import WEATHER_SUITE, weather_agent

    suite_text = WEATHER_SUITE.replace(
        "  system_prompt: You are a weather assistant. Use the get_weather tool.\n",
        "  system_prompt: \"For {{var('town')}}, key {{secret('TC_WEATHER_KEY')}}.\"\n"
        "  vars: {town: Paris}\n")
    assert suite_text != WEATHER_SUITE
    server = ScriptedServer(default_reply=weather_agent).start()
    try:
        result = run_paths([write_suite(tmp_path, suite_text)], server,
                           env={"TC_WEATHER_KEY": "weather-secret-4711"})
        sent = server.requests[0].json
    finally:
        server.stop()
    [recorded] = result.suites
    paris = next(e for e in recorded.evals if e.name == "paris")
    # Once per suite: every eval sends the same system prompt and, unless it has its own
    # `tools`, the suite's tools.
    assert recorded.system_prompt == "For Paris, key <SECRET:TC_WEATHER_KEY>."
    assert "weather-secret-4711" not in result.model_dump_json()
    assert sent["messages"][0]["content"] == "For Paris, key weather-secret-4711."
    assert recorded.tools == sent["tools"] and paris.tools is None
    assert recorded.tools_of(paris) == sent["tools"]
    assert [t["function"]["name"] for t in recorded.tools] == ["get_weather", "get_time"]


def test_reports_without_the_fields_still_load_and_plain_suites_write_none() -> None:
    plain = capital(BASE_FOLLOW_UP, "Paris", True)
    written = json.loads(reports(plain, plain)[0].model_dump_json())
    [suite_json] = written["suites"]
    assert "system_prompt" not in suite_json and "tools" not in suite_json
    assert "tools" not in suite_json["evals"][0]  # as older reports read
    loaded = Report.model_validate(written).suites[0]
    assert loaded.system_prompt is None and loaded.tools == []
    assert loaded.tools_of(loaded.evals[0]) == []
    with_setup = capital(BASE_FOLLOW_UP, "Paris", True, system_prompt="Be brief.",
                         tools=[WEATHER_TOOL])
    again = Report.model_validate_json(reports(with_setup, with_setup)[1].model_dump_json())
    assert again.suites[0].system_prompt == "Be brief."
    assert again.suites[0].tools == [WEATHER_TOOL]


def test_an_evals_own_tools_count_over_its_suites() -> None:
    base = capital(BASE_FOLLOW_UP, "Paris", True, tools=[WEATHER_TOOL])
    own = capital(BASE_FOLLOW_UP, "Lyon", False, tools=[WEATHER_TOOL])
    own.result.tools = []  # this eval offers no tools although its suite does
    body, _, _ = comment_for(*reports(base, own))
    prose, _ = assert_inert(body)
    assert "**✏️ Tools changed**: removed get\\_weather" in prose
