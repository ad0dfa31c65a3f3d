"""The `turncheck diff` of the support-bot example that the README and docs/examples.md
quote stays true: in a repository holding a copy of examples/support-bot/, a commit that
drops the tool instruction from the app's system prompt (in code) and re-records shows,
in `turncheck diff HEAD~1`, the two evals that broke and the cost of the app's own calls
falling: the lines the pages quote."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.action_harness import TURNCHECK
from tests.support.app_example_models import app_example_model
from tests.support.git_repo import GitRepo
from tests.support.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support-bot"
RECORDED_AT = "127.0.0.1:8766"
"""Where the example's cassette says its model calls went (the suite's `base_url`)."""
BASE_PROMPT = '''\
    "You are the support bot of Example Co. Use lookup_order to check an order before "
    "you say anything about it. Answer in one or two short sentences."'''
HEAD_PROMPT = '''\
    "You are the support bot of Example Co. Answer in one or two short sentences."'''
QUOTE_MARK = "<!-- Copied from a real `turncheck diff` of the support bot"
VOLATILE = [(re.compile(r"\b[0-9a-f]{12}\b"), "<commit>"),
            (re.compile(r"/\S*turncheck-base-\S+"), "<work tree>")]


PAGES = ("README.md", "docs/examples.md")


def quoted(page: str) -> list[str]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(QUOTE_MARK)) + 2
    return lines[start:lines.index("```", start)]


def steady(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line


def missing_from(quoted: list[str], output: list[str]) -> list[str]:
    """The quoted lines the output does not print, in that order."""
    printed = iter(steady(line) for line in output)
    return [line for line in quoted if steady(line) not in printed]


def copy_example(repo: GitRepo, upstream: str) -> None:
    """The example's support-bot suite and app in `repo`/support-bot, its model calls
    pointed at `upstream` (the simulated customer's suite beside it is left out: the
    quoted diff is the support-bot suite's)."""
    shutil.copytree(EXAMPLE, repo.path / "support-bot",
                    ignore=shutil.ignore_patterns("simulated-customer.*"))
    for name in ("support-bot.eval.yaml", "support-bot.eval.cassette.yaml"):
        path = repo.path / "support-bot" / name
        path.write_text(path.read_text().replace(RECORDED_AT, upstream))


def turncheck(repo: GitRepo, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNCHECK), *args], cwd=repo.path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_prompt_change_in_the_app_code_shows_in_diff_as_the_readme_says(
        tmp_path: Path) -> None:
    app = EXAMPLE / "app.py"
    assert BASE_PROMPT in app.read_text(), "the README's diff no longer applies to app.py"
    repo = GitRepo(tmp_path / "repo")
    # `python app.py`: the interpreter running the tests, which has openai and aiohttp.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "OPENAI_API_KEY": "sk-scripted", "TMPDIR": str(tmp_path)}
    with ScriptedServer(default_reply=app_example_model) as server:
        copy_example(repo, server.base_url.removeprefix("http://").removesuffix("/v1"))
        base = repo.commit("support bot")
        edited = repo.path / "support-bot" / "app.py"
        edited.write_text(edited.read_text().replace(BASE_PROMPT, HEAD_PROMPT))
        recorded = turncheck(repo, env, "record", "support-bot/", "--prune")
        assert recorded.returncode == 1, recorded.stdout + recorded.stderr  # two evals fail
        repo.commit("Shorter system prompt")
    # The server is gone: both sides replay, each starting its own commit's app.
    diffed = turncheck(repo, env, "diff", "HEAD~1", "--markdown", str(tmp_path / "out.md"))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    assert diffed.returncode == 1
    output = diffed.stderr.splitlines() + diffed.stdout.splitlines()
    for page in PAGES:
        assert missing_from(quoted(page), output) == [], page
    assert f"turncheck: diff against {base[:12]}" in diffed.stderr
    comment = (tmp_path / "out.md").read_text()
    assert "## ❌ 2 broke · order status, unknown order" in comment
    assert "Your order A1001 is on its way and should arrive soon." in comment


FRIENDLIER_PROMPT = BASE_PROMPT.replace("short sentences.", "short, friendly sentences.")
ESCALATE = ''', {
    "type": "function",
    "function": {
        "name": "escalate",
        "description": "Hand the conversation to a human agent, with a one-line summary.",
        "parameters": {"type": "object", "properties": {"summary": {"type": "string"}},
                       "required": ["summary"]},
    },
}]'''
COMMENT_QUOTE_MARK = "<!-- Copied from the comment of a real `turncheck diff` of the support bot"


def quoted_comment(page: str) -> list[str]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(COMMENT_QUOTE_MARK)) + 2
    return lines[start:lines.index("````", start)]


def test_a_prompt_edit_and_a_removed_tool_flip_no_check_and_the_comment_shows_both(
        tmp_path: Path) -> None:
    """docs/targets.md's comment: the app's system prompt reworded in code and a tool it
    no longer offers; every check still passes, and the comment says what the app sent
    differently rather than "Nothing changed"."""
    app = EXAMPLE / "app.py"
    assert BASE_PROMPT in app.read_text() and ESCALATE in app.read_text(), \
        "docs/targets.md's change no longer applies to app.py"
    repo = GitRepo(tmp_path / "repo")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "OPENAI_API_KEY": "sk-scripted", "TMPDIR": str(tmp_path)}
    with ScriptedServer(default_reply=app_example_model) as server:
        copy_example(repo, server.base_url.removeprefix("http://").removesuffix("/v1"))
        repo.commit("support bot")
        edited = repo.path / "support-bot" / "app.py"
        edited.write_text(edited.read_text().replace(BASE_PROMPT, FRIENDLIER_PROMPT)
                          .replace(ESCALATE, "]"))
        recorded = turncheck(repo, env, "record", "support-bot/", "--prune")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr  # no check flips
        repo.commit("Friendlier answers; escalation is not ready yet")
    out = tmp_path / "out.md"
    diffed = turncheck(repo, env, "diff", "HEAD~1", "--markdown", str(out))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    assert diffed.returncode == 0, diffed.stdout + diffed.stderr
    comment = out.read_text()
    assert "Nothing changed" not in comment
    assert missing_from(quoted_comment("docs/targets.md"), comment.splitlines()) == []


def test_a_line_the_diff_does_not_print_is_caught() -> None:
    output = ["turncheck: diff against 0123456789ab: 1 suite", "tokens: 410 → 205 (−205)"]
    assert missing_from(["turncheck: diff against fedcba987654: 1 suite"], output) == []
    assert missing_from(["tokens: 410 → 206 (−204)"], output) == ["tokens: 410 → 206 (−204)"]
