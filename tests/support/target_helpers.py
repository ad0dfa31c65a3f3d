"""Suites whose conversations are with an app (docs/targets.md), for the target tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.action_harness import TURNCHECK
from tests.support.git_repo import GitRepo
from tests.support.scripted_server import Json, ScriptedServer, _content_text, conversation_of
from turncheck.targets.process import group_member_runs

APPS = Path(__file__).resolve().parent / "target_apps"
SUPPORT_APP = APPS / "support_app.py"
MEMORY_APP = APPS / "memory_app.py"
STREAM_APP = APPS / "stream_app.py"

THREE_TURNS = """\
evals:
  - name: remembers
    prompt: My name is Ada.
    checks:
      - match: "*You are Ada from Paris*"
      - prompt: I live in Paris.
        checks:
          - match: "*You are Ada from Paris*"
          - prompt: What do you know about me?
            checks:
              - match: "*You are Ada from Paris*"
"""


def memory_reply(body: Json) -> str:
    """The scripted model: answers the memory question from the history it is sent."""
    users = [_content_text(m.get("content")) for m in conversation_of(body)
             if m.get("role") == "user"]
    said = " ".join(users)
    if users and "know about me" in users[-1]:
        return "You are Ada from Paris." if "Ada" in said and "Paris" in said \
            else "I know nothing about you."
    return "Noted."


def http_target(env: dict[str, str], *, session_line: str = "session: client",
                body: str = '{message: "{{ last_message }}", session_id: "{{ session_id }}"}',
                ready_timeout: float = 20) -> str:
    """The metadata of a suite talking to `support_app.py` over HTTP."""
    variables = ", ".join(f'{name}: "{value}"' for name, value in env.items())
    return f"""\
metadata:
  name: support-bot
  model: gpt-4o-mini
  target:
    start: {sys.executable} {SUPPORT_APP} {{port}}
    ready: /health
    ready_timeout: {ready_timeout}
    http:
      path: /chat
      body: {body}
      reply: reply
    {session_line}
    stateful: true
    env: {{{variables}}}
"""


def upstream_env(base_url: str) -> dict[str, str]:
    """turncheck's own environment: where the proxy forwards, with which keys."""
    return {"OPENAI_BASE_URL": base_url, "ANTHROPIC_BASE_URL": base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "sk-ant-test-SECRET-KEY-456"}


def group_alive(pid_file: Path) -> bool:
    """Whether any process of the group the app recorded in `pid_file` still runs (a
    zombie waiting for init to reap it does not run)."""
    group = int(pid_file.read_text())
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return group_member_runs(group)


def comparable(report: Any) -> list[tuple[Any, ...]]:
    """What must be identical between a record and its replay (not timings)."""
    return [(e.name, e.status, e.passed_on_turn, e.error, e.usage, e.cost_usd,
             [(t.prompt, t.response, t.usage, t.cost_usd) for t in e.turns])
            for suite in report.suites for e in suite.evals]


def turncheck_in(repo: GitRepo, env: dict[str, str], *args: str
                 ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TURNCHECK), *args], cwd=repo.path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def app_change_repo(tmp_path: Path, suite: str, change: Callable[[str], str],
                    reply: Callable[[Json], str], *, head_passes: bool
                    ) -> tuple[GitRepo, dict[str, str], str, str]:
    """A repository with the support app under bot/ and `suite`, recorded at base, then a
    head commit whose app code is `change(code)`, recorded again (its run exit code 0 if
    `head_passes`, else 1): the repository, the environment, the base and the head."""
    app_code = SUPPORT_APP.read_text()
    repo = GitRepo(tmp_path / "repo")
    with ScriptedServer(default_reply=reply) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-1",
               "TMPDIR": str(tmp_path)}
        repo.write("bot/app.py", app_code)
        repo.write("bot/bot.eval.yaml", suite)
        recorded = turncheck_in(repo, env, "record", "bot/bot.eval.yaml")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        base = repo.commit("base")
        repo.branch("feature", checkout=True)
        changed = change(app_code)
        assert changed != app_code, "the change does not apply to the support app"
        repo.write("bot/app.py", changed)
        recorded = turncheck_in(repo, env, "record", "bot/bot.eval.yaml")
        assert recorded.returncode == (0 if head_passes else 1), recorded.stdout + recorded.stderr
        head = repo.commit("head: the app's code changed")
    return repo, env, base, head
