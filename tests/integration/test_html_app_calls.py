"""The HTML report shows an app target's own model calls as the comment does: per suite the
app's calls on each side with their tokens and cost, turncheck's own (the judge's) apart,
and per eval and turn how many calls the app made. The reports are real runs of
examples/support-bot: the committed recording replayed (base) beside a copy whose system
prompt in code drops the tool instruction, recorded against the scripted model (head)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from html import unescape
from pathlib import Path

import pytest

from tests.support.app_example_models import app_example_model
from tests.support.engine_helpers import run_paths
from tests.support.scripted_server import ScriptedServer
from turncheck.choices import Mode
from turncheck.compare.comparison import compare_reports
from turncheck.render.app_calls import app_call_suites
from turncheck.render.html_report import render_report
from turncheck.report.run import Report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-bot"
SUITE = "support-bot.eval.yaml"
RECORDED_AT = "127.0.0.1:8766"
BASE_PROMPT = "Use lookup_order to check an order before \"\n    \"you say anything about it. "


def _copy(tmp_path: Path, name: str, upstream: str) -> Path:
    folder = shutil.copytree(EXAMPLE, tmp_path / name)
    for file in (SUITE, "support-bot.eval.cassette.yaml"):
        path = folder / file
        path.write_text(path.read_text().replace(RECORDED_AT, upstream))
    return folder


def _run(folder: Path, mode: Mode, base_url: str) -> Report:
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "OPENAI_API_KEY": "sk-scripted"}
    report = run_paths([folder / SUITE], None, mode, base_url=base_url, env=env)
    for suite in report.suites:  # each side's tree holds it at the same path
        suite.path = f"support-bot/{SUITE}"
    return report


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Report]:
    tmp_path = tmp_path_factory.mktemp("support-bot")
    with ScriptedServer(default_reply=app_example_model) as server:
        upstream = server.base_url.removeprefix("http://").removesuffix("/v1")
        base = _copy(tmp_path, "base", upstream)
        head = _copy(tmp_path, "head", upstream)
        app = head / "app.py"
        assert BASE_PROMPT in app.read_text(), "the example's system prompt changed"
        app.write_text(app.read_text().replace(BASE_PROMPT, ""))
        _run(head, "record", server.base_url)
        base_url = server.base_url
    # The server is gone: both sides replay, each starting its own app.
    return _run(base, "replay", base_url), _run(head, "replay", base_url)


def _text(html: str) -> str:
    """The page's text, as a person reads it (tags dropped, entities decoded)."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_page_shows_each_sides_app_calls_beside_the_comments_figures(
        sides: tuple[Report, Report]) -> None:
    base, head = sides
    comparison = compare_reports(base, head)
    # What the comment says (render/app_calls.py), the README's diff of this example.
    assert app_call_suites(comparison.suites) == [
        ("support-bot", "app model calls: 8 → 5 (1.6 → 1 per turn)")]

    page = _text(render_report(head=head, base=base, comparison=comparison))

    assert "App targets: the app's own model calls" in page
    [suite] = comparison.suites
    assert suite.totals.base is not None and suite.totals.head is not None
    app_tokens = f"{suite.totals.base.tokens:,} → {suite.totals.head.tokens:,}"
    assert suite.totals.base.tokens > suite.totals.head.tokens > 0
    assert (f"support-bot support-bot/support-bot.eval.yaml 8 → 5 (1.6 → 1 per turn) {app_tokens} "
            in page), page[:3000]
    # Per eval: the one that stopped looking the order up makes one call instead of two.
    assert "app model calls 2 → 1" in page
    # Per turn: the calls the app made in it.
    assert "turn 1 · 2 app model calls ·" in page
    assert "turn 1 · 1 app model call ·" in page


def test_one_run_shows_its_app_calls_per_suite_and_per_turn(
        sides: tuple[Report, Report]) -> None:
    base, _ = sides
    page = _text(render_report(head=base))

    tokens = f"{base.suites[0].usage.total:,}"
    assert f"support-bot support-bot/{SUITE} 8 in 5 turns (1.6 per turn) {tokens} " in page
    calls = {e.name: e.app_calls() for e in base.suites[0].evals}
    assert calls == {"order status": (2, 1), "unknown order": (2, 1),
                     "remembers the customer": (4, 3)}
    for name, made in (("order status", 2), ("unknown order", 2),
                       ("remembers the customer", 4)):
        assert re.search(f"{name} support-bot · support-bot/{SUITE} head passed on turn "
                         f"[13] app model calls {made} ", page), name
    # The three turns of the conversation that remembers: the order is looked up in the second.
    assert re.search(r"turn 1 · 1 app model call .*turn 2 · 2 app model calls .*"
                     r"turn 3 · 1 app model call ", page)


def test_a_turns_time_to_first_token_is_shown_where_it_was_measured(
        sides: tuple[Report, Report]) -> None:
    base, _ = sides
    first = base.suites[0].evals[0].turns[0]
    assert first.first_token_ms is not None  # the http target measures it on every turn
    assert f"first token {first.first_token_ms:,.0f} ms" in _text(render_report(head=base))

    unmeasured = base.model_copy(deep=True)
    for result in unmeasured.suites[0].evals:
        result.turns = [t.model_copy(update={"first_token_ms": None}) for t in result.turns]
    assert "first token" not in _text(render_report(head=unmeasured))
