"""What the app sent, base → head, in every view (docs/targets.md, "What the app sent"):
`turncheck diff` on a repository whose commits change the refund app's code (official
`openai` SDK) and flip no check — its system prompt, a second model call per turn, a
tool it no longer offers. Each commit is recorded against the scripted model; the diffs
replay. None of them may read "Nothing changed"."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.refund_helpers import REFUND_APP, refund_model
from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import turncheck_in

PROMPT = '"You are the refund desk of Example Co."'
LONGER_PROMPT = '"You are the refund desk of Example Co.\\nAnswer in one short paragraph."'
ANSWERED = '''            history.append({"role": "assistant", "content": text})
            return text'''
GUARDED = '''            _chat_once(client, [{"role": "system", "content": SYSTEM_PROMPT},
                                {"role": "user", "content": "Is this reply safe? " + text}], [])
''' + ANSWERED
BOTH_TOOLS = '"APP_TOOLS", "lookup_order,issue_refund"'
ONE_TOOL = '"APP_TOOLS", "lookup_order"'

GREETINGS = "".join(f"""\
  - name: greet-{number}
    turns:
      - prompt: Hi there.
        checks: [{{match: "*help*"}}]
      - prompt: Hello again.
        checks: [{{match: "*help*"}}]
""" for number in (1, 2, 3))
SUITE = f"""\
metadata:
  name: refund-desk
  model: gpt-4o-mini
  watch: [bot/app.py]
  target:
    start: {sys.executable} app.py {{port}}
    ready: /health
    ready_timeout: 20
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
      reply: reply
    session: client
    stateful: true
evals:
{GREETINGS}"""


@dataclass(frozen=True)
class Commits:
    repo: GitRepo
    env: dict[str, str]
    shas: list[str]
    """base, then the prompt change, the second call per turn, the removed tool."""


CHANGES: list[Callable[[str], str]] = [
    lambda code: code.replace(PROMPT, LONGER_PROMPT),
    lambda code: code.replace(ANSWERED, GUARDED),
    lambda code: code.replace(BOTH_TOOLS, ONE_TOOL),
]


@pytest.fixture(scope="module")
def commits(tmp_path_factory: pytest.TempPathFactory) -> Commits:
    """Four commits of one repository, each recorded: the base, then each change on top
    of the one before."""
    root = tmp_path_factory.mktemp("app-diff")
    repo = GitRepo(root / "repo")
    code = REFUND_APP.read_text()
    shas = []
    with ScriptedServer(default_reply=refund_model) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-test-1", "TMPDIR": str(root)}
        repo.write("bot/bot.eval.yaml", SUITE)
        for change in [lambda same: same, *CHANGES]:
            changed = change(code)
            assert changed != code or not shas, "a change does not apply to the refund app"
            code = changed
            repo.write("bot/app.py", code)
            recorded = turncheck_in(repo, env, "record", "bot/bot.eval.yaml")
            assert recorded.returncode == 0, recorded.stdout + recorded.stderr
            shas.append(repo.commit(f"change {len(shas)}"))
    return Commits(repo, env, shas)


@dataclass(frozen=True)
class Diffed:
    console: str
    comment: str
    html: str
    comparison: dict[str, Any]

    @property
    def headline(self) -> str:
        return next(line for line in self.comment.splitlines() if line.startswith("## "))

    @property
    def changes(self) -> list[dict[str, Any]]:
        [suite] = self.comparison["suites"]
        return list(suite.get("app_changes", []))


def diff(commits: Commits, tmp_path: Path, number: int) -> Diffed:
    """`turncheck diff` of change `number` (1–3) against the commit before it."""
    commits.repo.checkout(commits.shas[number])
    out = {name: tmp_path / name for name in ("c.json", "c.md", "c.html")}
    ran = turncheck_in(commits.repo, commits.env, "diff", commits.shas[number - 1],
                       "--json", str(out["c.json"]), "--markdown", str(out["c.md"]),
                       "--html", str(out["c.html"]))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr
    # The comment escapes Markdown (`\(`, `\_`): read it as GitHub shows it.
    return Diffed(ran.stdout, out["c.md"].read_text().replace("\\", ""),
                  out["c.html"].read_text(), json.loads(out["c.json"].read_text()))


def assert_changed(diffed: Diffed) -> None:
    assert "Nothing changed" not in diffed.comment
    assert "no change" not in diffed.headline
    # The suite ran because the app's file changed: the comment and the console say so.
    assert "ran because bot/app.py changed (watch: bot/app.py)" in diffed.comment
    assert "ran because: bot/bot.eval.yaml: bot/app.py changed" in diffed.console
    assert "ran because bot/app.py changed (watch: bot/app.py)" in diffed.html  # issue 43
    [suite] = diffed.comparison["suites"]
    assert all(row["transition"] == "unchanged" for row in suite["evals"])


def test_a_system_prompt_changed_in_the_apps_code_is_in_the_headline_and_diffed(
        commits: Commits, tmp_path: Path) -> None:
    diffed = diff(commits, tmp_path, 1)
    assert_changed(diffed)
    assert "the app's system prompt changed" in diffed.headline
    [prompt] = [c for c in diffed.changes if c["what"] == "system prompt"]
    assert (prompt["eval_count"], prompt["turns"]) == (3, 6)  # one line for all of them
    assert "system prompt changed · in greet-1, greet-2, greet-3 (3 evals, 6 turns)" \
        in diffed.comment
    # The line diff, as a suite's own system prompt change is shown.
    assert "```diff\n@@ -1 +1,2 @@\n You are the refund desk of Example Co.\n" \
           "+Answer in one short paragraph.\n```" in diffed.comment
    assert "+Answer in one short paragraph." in diffed.console
    assert 'data-app-changes="bot/bot.eval.yaml"' in diffed.html
    assert "Answer in one short paragraph." in diffed.html


def test_a_second_model_call_per_turn_is_in_the_headline_and_the_cost_section(
        commits: Commits, tmp_path: Path) -> None:
    diffed = diff(commits, tmp_path, 2)
    assert_changed(diffed)
    assert re.search(r"the app's model calls per turn 1 → 2 · cost \+\$[\d.]+ \(\+[\d.]+ ?%\)",
                     diffed.headline), diffed.headline
    assert "app model calls: 6 → 12 (1 → 2 per turn)" in diffed.comment  # the cost section
    cost = diffed.comment.split("💰 Cost")[1]
    assert re.search(r"\| Model \| \$[\d.]+ \| \$[\d.]+ \| \+\$[\d.]+ \| \+[\d.]+ ?% \|", cost)
    assert "model calls per turn 1 → 2 · in greet-1, greet-2, greet-3 (3 evals, 6 turns)" \
        in diffed.console
    assert "model calls per turn 1 → 2" in diffed.html


def test_a_tool_the_app_no_longer_offers_is_shown(commits: Commits, tmp_path: Path) -> None:
    diffed = diff(commits, tmp_path, 3)
    assert_changed(diffed)
    assert "the app's tools offered: −issue_refund" in diffed.headline
    assert "tools offered: −issue_refund · in greet-1, greet-2, greet-3 (3 evals, 6 turns)" \
        in diffed.comment
    assert "tools offered: −issue_refund" in diffed.console
    assert "tools offered: −issue_refund" in diffed.html


@pytest.mark.parametrize(("number", "headline", "shown"), [
    (1, "the app's system prompt changed", "+Answer in one short paragraph."),
    (2, "the app's model calls per turn 1 → 2 · cost +$",
     "app model calls: 6 → 12 (1 → 2 per turn)"),
    (3, "the app's tools offered: −issue_refund",
     "tools offered: −issue_refund · in greet-1, greet-2, greet-3 (3 evals, 6 turns)"),
])
def test_the_action_comments_each_app_change_on_the_pull_request(
        commits: Commits, tmp_path: Path, github_fake: FakeGitHub, number: int, headline: str,
        shown: str) -> None:
    """The same three changes through the action (fake GitHub): the posted comment says
    what the app sent differently, and the check passes (no check flipped)."""
    commits.repo.checkout(commits.shas[number])
    run = run_pull_request(commits.repo, tmp_path / "runner", github_fake,
                           commits.shas[number - 1], commits.shas[number])
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    assert run.returncode == 0, run.stdout + run.stderr
    [comment] = github_fake.comments_on(7)
    body = comment.body.replace("\\", "")
    assert "Nothing changed" not in body
    assert headline in next(line for line in body.splitlines() if line.startswith("## "))
    assert shown in body
    assert "ran because bot/app.py changed (watch: bot/app.py)" in body
    html = (commits.repo.path / "turncheck-report.html").read_text()
    assert "ran because bot/app.py changed (watch: bot/app.py)" in html
