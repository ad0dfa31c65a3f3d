"""`turncheck diff` on a repository whose head commit changes an app's system prompt in
its code (docs/targets.md): the base side starts the base commit's app from its own work
tree, so the comparison shows the eval's change and the cost of the app's own calls."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.scripted_server import Json, conversation_of
from tests.support.target_helpers import (
    THREE_TURNS,
    app_change_repo,
    memory_reply,
    turncheck_in,
)

BASE_PROMPT = 'SYSTEM_PROMPT = os.environ.get("APP_SYSTEM_PROMPT", ' \
    '"You are the support bot of Example Co.")'
HEAD_PROMPT = BASE_PROMPT.replace("Example Co.", "Example Co. Always answer in French, "
                                  "politely and at length.")
SUITE = f"""\
metadata:
  name: support-bot
  model: gpt-4o-mini
  watch: [bot/app.py]
  target:
    start: {sys.executable} app.py {{port}}
    ready: /health
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
      reply: reply
    session: client
    stateful: true
""" + THREE_TURNS


def french_or_memory(body: Json) -> str:
    system = " ".join(str(m.get("content")) for m in conversation_of(body)
                      if m.get("role") == "system")
    return "Bonjour !" if "French" in system else memory_reply(body)


def prompt_change_repo(tmp_path: Path) -> tuple[GitRepo, dict[str, str], str, str]:
    """A repository whose head commit changes the app's system prompt in its code, both
    sides recorded: the repository, the environment, the base and the head commit."""
    return app_change_repo(tmp_path, SUITE, lambda code: code.replace(BASE_PROMPT, HEAD_PROMPT),
                           french_or_memory, head_passes=False)  # the head fails now


def test_diff_runs_each_side_s_own_app_code_and_shows_the_change_and_its_cost(
        tmp_path: Path) -> None:
    repo, env, base, _ = prompt_change_repo(tmp_path)
    # Replay: the server is gone, every answer comes from the committed cassettes.
    diffed = turncheck_in(repo, env, "diff", base, "--json", str(tmp_path / "diff.json"),
                        "--markdown", str(tmp_path / "comment.md"))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    comparison = json.loads((tmp_path / "diff.json").read_text())

    [suite] = comparison["suites"]
    [row] = suite["evals"]
    assert (row["name"], row["transition"], row["regression"]) == ("remembers", "broken", True)
    assert (row["base"]["passed_on_turn"], row["head"]["status"]) == (3, "fail")
    # The app's own model calls, priced: the head's longer system prompt costs more.
    assert row["delta"]["input_tokens"] == 3 * 8  # 8 more words in each of 3 calls
    assert comparison["totals"]["delta"]["cost_usd"] > 0
    comment = (tmp_path / "comment.md").read_text()
    assert "1 broke · remembers now fails after 3 turns" in comment
    assert "❌ Bonjour" in comment and "✅ You are Ada from Paris." in comment
    assert re.search(r"\| Model \| \$[\d.]+ \| \$[\d.]+ \| \+\$[\d.]+ \| \+[\d.]+% \|", comment)


def test_the_action_runs_each_side_s_own_app_code_and_comments_the_change(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    repo, env, base, head = prompt_change_repo(tmp_path)
    # The upstream the app's calls were recorded against is part of their key, as a
    # suite's base_url is: the job names the same one (the server itself is gone).
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           extra_env={"OPENAI_BASE_URL": env["OPENAI_BASE_URL"]})
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    assert run.returncode == 1, run.stdout + run.stderr  # the memory eval broke
    [comment] = github_fake.comments_on(7)
    assert "1 broke · remembers now fails after 3 turns" in comment.body
    assert "❌ Bonjour" in comment.body and "✅ You are Ada from Paris." in comment.body
    assert "app model calls: 3 → 3" in comment.body
    # What the app sent differently, and the watched file the suite ran for.
    body = comment.body.replace("\\", "")
    assert "### 🛰️ What the app sent differently · support-bot" in body
    assert "system prompt changed · in remembers (1 eval, 3 turns)" in body
    assert "- head: You are the support bot of Example Co. Always answer in French" in body
    assert "ran because bot/app.py changed (watch: bot/app.py)" in body
    assert re.search(r"\| Model \| \$[\d.]+ \| \$[\d.]+ \| \+\$[\d.]+ \| \+[\d.]+% \|",
                     comment.body)
