"""Issue 44, item 2: a python target's module is found as Python developers expect (the
suite's folder, the repository's root, a `path:` the suite names), each side importing
from its own tree, and the error says where it looked.

The usual layout: the suite in evals/, the code in app/ (`app.bot:answer`). The app
builds its OpenAI client with the proxy URL it is given and its system prompt is in
code; the head commit changes the prompt. `turncheck diff main` must run the base
commit's code on the base side: the base's recordings replay and the head's change
shows, with no PYTHONPATH pointing at either tree."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.scripted_server import Json, ScriptedServer, conversation_of
from tests.support.target_helpers import turncheck_in

BOT = '''\
from openai import OpenAI

SYSTEM = "You are the helpdesk bot. Answer in English."


def answer(last_message, openai_base_url):
    client = OpenAI(base_url=openai_base_url)
    done = client.chat.completions.create(
        model="gpt-4o-mini", temperature=0,
        messages=[{"role": "system", "content": SYSTEM},
                  {"role": "user", "content": last_message}])
    return done.choices[0].message.content
'''
SUITE = """\
metadata:
  name: helpdesk
  model: gpt-4o-mini
  target:
    python: @MODULE@:answer
@PATH@evals:
  - name: greets
    prompt: Hello!
    checks:
      - match: "*Hello*"
"""


def greeting(body: Json) -> str:
    system = " ".join(str(m.get("content")) for m in conversation_of(body)
                      if m.get("role") == "system")
    return "Bonjour !" if "French" in system else "Hello! How can I help?"


def environment(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    return {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test-1",
            "TMPDIR": str(tmp_path)}


def layout_repo(tmp_path: Path, module: str, code_path: str, path_line: str = ""
                ) -> tuple[GitRepo, dict[str, str], str, str]:
    """The suite in evals/, the bot at `code_path`, recorded at base; a head commit
    asking for French, recorded again. The repository, the environment, the base and
    the head commit."""
    repo = GitRepo(tmp_path / "repo")
    suite = SUITE.replace("@MODULE@", module).replace("@PATH@", path_line)
    with ScriptedServer(default_reply=greeting) as server:
        env = environment(tmp_path, server.base_url)
        repo.write(code_path, BOT)
        repo.write(str(Path(code_path).parent / "__init__.py"), "")
        repo.write("evals/helpdesk.eval.yaml", suite)
        recorded = turncheck_in(repo, env, "record", "evals/helpdesk.eval.yaml")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        base = repo.commit("base")
        repo.branch("feature", checkout=True)
        repo.write(code_path, BOT.replace("Answer in English.", "Answer in French."))
        recorded = turncheck_in(repo, env, "record", "evals/helpdesk.eval.yaml")
        assert recorded.returncode == 1, recorded.stdout + recorded.stderr  # Bonjour
        head = repo.commit("head: the bot answers in French")
    return repo, env, base, head


def diff_rows(repo: GitRepo, env: dict[str, str], base: str, tmp_path: Path) -> list[Json]:
    diffed = turncheck_in(repo, env, "diff", base, "--json", str(tmp_path / "diff.json"))
    assert "Traceback" not in diffed.stderr, diffed.stderr
    [suite] = json.loads((tmp_path / "diff.json").read_text())["suites"]
    return list(suite["evals"])


def test_diff_runs_the_base_commits_module_from_the_repository_root(tmp_path: Path) -> None:
    repo, env, base, _ = layout_repo(tmp_path, "app.bot", "app/bot.py")
    [row] = diff_rows(repo, env, base, tmp_path)
    assert row["base"]["status"] == "pass", row  # the base's code, with its recordings
    assert row["head"]["status"] == "fail", row
    assert row["transition"] == "broken"


def test_a_path_the_suite_names_is_searched_first(tmp_path: Path) -> None:
    repo, env, base, _ = layout_repo(tmp_path, "bot", "services/helpdesk/bot.py",
                                  "    path: [../services/helpdesk]\n")
    [row] = diff_rows(repo, env, base, tmp_path)
    assert (row["base"]["status"], row["head"]["status"]) == ("pass", "fail"), row


def test_a_module_not_found_says_where_it_looked(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("evals/helpdesk.eval.yaml", SUITE.replace("@MODULE@", "missing.bot")
               .replace("@PATH@", "    path: [../lib]\n"))
    (repo.path / "lib").mkdir()
    ran = turncheck_in(repo, environment(tmp_path, "http://127.0.0.1:9/v1"), "run", "evals")
    assert "No module named 'missing'" in ran.stdout, ran.stdout + ran.stderr
    assert "looked in lib/, evals/, ./" in ran.stdout or \
        f"looked in {repo.path}/lib/, {repo.path}/evals/, {repo.path}/" in ran.stdout, ran.stdout


def test_the_action_runs_each_sides_module_in_its_own_process(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    """The action runs a python target in a child process (function_worker): there too
    the module comes from the side's own repository root."""
    repo, env, base, head = layout_repo(tmp_path, "app.bot", "app/bot.py")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           extra_env={"OPENAI_BASE_URL": env["OPENAI_BASE_URL"]})
    assert "Traceback" not in run.stdout + run.stderr, run.stderr
    [comment] = github_fake.comments_on(7)
    assert "1 broke" in comment.body, comment.body
    assert "cannot import" not in comment.body
