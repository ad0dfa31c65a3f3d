"""Where the change comes from (the comment's cost section): a cost change of an app's
eval names the cause the report can see — the app's system prompt (+N input tokens), the
tools it offered — rather than "longer or shorter answers". Base and head are real runs of
the refund app (official `openai` SDK) recorded against the scripted model."""

from __future__ import annotations

from pathlib import Path

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.refund_helpers import refund_model, refund_target
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import upstream_env
from turncheck import _api
from turncheck.compare.comparison import compare_reports
from turncheck.report.run import Report

BASE_PROMPT = "You are the refund desk of Example Co."


def recorded(tmp_path: Path, name: str, env: dict[str, str]) -> Report:
    folder = tmp_path / name
    folder.mkdir()
    suite = write_suite(folder, refund_target(env))
    with ScriptedServer(default_reply=refund_model) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
    for side in report.suites:
        side.path = "bot/refund.eval.yaml"
    return report


def cost_lines(base: Report, head: Report) -> list[str]:
    comment = _api.render_comment(compare_reports(base, head), head=head, base=base)
    # The comment escapes Markdown (`\(`, `\_`): read it as GitHub shows it.
    return [line.replace("\\", "") for line in comment.splitlines()
            if line.startswith("- **refund**")]


def test_a_longer_system_prompt_in_the_apps_code_is_named_with_its_input_tokens(
        tmp_path: Path) -> None:
    base = recorded(tmp_path, "base", {})
    head = recorded(tmp_path, "head", {
        "APP_SYSTEM_PROMPT": BASE_PROMPT + " Always be polite and brief."})
    more = head.suites[0].evals[0].usage.input_tokens - base.suites[0].evals[0].usage.input_tokens
    assert more > 0
    [line] = cost_lines(base, head)
    assert f"the app's system prompt changed (+{more} input tokens)" in line
    assert "longer or shorter answers" not in line


def test_a_tool_the_app_no_longer_offers_is_named(tmp_path: Path) -> None:
    base = recorded(tmp_path, "base", {})
    head = recorded(tmp_path, "head", {"APP_TOOLS": "lookup_order"})
    [line] = cost_lines(base, head)
    assert "tools offered: −issue_refund" in line
    assert "the app made 3 model calls instead of 4" in line
