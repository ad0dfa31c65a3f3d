"""Issue 44, item 3: replay never leaves the machine, python targets too.

A module building its client at import (`client = OpenAI()`, the SDK's usual pattern)
with OPENAI_BASE_URL set in turncheck's own environment: the module sees the proxy's URL
and a placeholder key, so `record` records through the proxy and `replay` sends nothing
upstream. An app that calls a host directly in replay gets an error naming the host; in
record, an app whose model calls bypass the proxy gets a warning saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_server import ScriptedServer

MODULE_CLIENT = '''\
import os

from openai import OpenAI

client = OpenAI()  # built at import: reads OPENAI_BASE_URL and OPENAI_API_KEY now
SEEN_KEY = os.environ.get("OPENAI_API_KEY")


def answer(last_message):
    done = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": last_message}])
    return done.choices[0].message.content + f" (key {SEEN_KEY[:8]})"
'''
DIRECT_CALL = '''\
import urllib.request


def answer(last_message):
    with urllib.request.urlopen("http://weather.example.com/today", timeout=5) as reply:
        return reply.read().decode()
'''
HARD_CODED = '''\
from openai import OpenAI

client = OpenAI(base_url="@URL@", api_key="sk-hard-coded")


def answer(last_message):
    done = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": last_message}])
    return done.choices[0].message.content
'''
SUITE = """\
metadata:
  name: helpdesk
  model: gpt-4o-mini
  target:
    python: bot:answer
evals:
  - name: greets
    prompt: Hello!
    checks:
      - match: "*Hello*"
"""


def suite_with(tmp_path: Path, code: str) -> Path:
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "bot.py").write_text(code)
    (folder / "helpdesk.eval.yaml").write_text(SUITE)
    return folder


def turncheck(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args, str(folder)],
                          cwd=folder.parent, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def own_environment(base_url: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    return {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-real-SECRET-123"}


def test_a_module_level_client_records_through_the_proxy_and_replays_offline(
        tmp_path: Path) -> None:
    folder = suite_with(tmp_path, MODULE_CLIENT)
    with ScriptedServer(default_reply="Hello there!") as server:
        env = own_environment(server.base_url)
        recorded = turncheck(folder, env, "record")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert "App model calls: helpdesk: 1 in 1 turn (1 per turn)" in recorded.stdout
        assert "Warning" not in recorded.stdout
        # The proxy, not the app, sent turncheck's key upstream; the app had a placeholder.
        [request] = server.requests
        assert request.headers["authorization"] == "Bearer sk-real-SECRET-123"
        assert "(key turnchec)" in recorded.stdout
        assert (folder / "helpdesk.eval.cassette.yaml").exists()
        server.reset()
        replayed = turncheck(folder, env, "run")
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert server.requests == [], "replay reached the upstream"


def test_an_app_calling_another_host_in_replay_gets_an_error_naming_it(tmp_path: Path) -> None:
    folder = suite_with(tmp_path, DIRECT_CALL)
    ran = turncheck(folder, own_environment("http://127.0.0.1:9/v1"), "run")
    assert ran.returncode != 0
    assert "the app tried to reach weather.example.com:80 directly: in replay nothing " \
        "leaves the machine" in ran.stdout, ran.stdout + ran.stderr
    # said once in the run's output, as for an http or command app (replay_guard.py)
    assert ran.stderr.count("turncheck replay: the app tried to reach "
                            "weather.example.com:80: refused") == 1, ran.stderr


def test_record_warns_when_the_apps_calls_bypass_the_proxy(tmp_path: Path) -> None:
    with ScriptedServer(default_reply="Hello there!") as server:
        folder = suite_with(tmp_path, HARD_CODED.replace("@URL@", server.base_url))
        recorded = turncheck(folder, own_environment(server.base_url), "record")
        assert len(server.requests) == 1  # straight to the server, past the proxy
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert ("Warning: helpdesk: the app made no model call through turncheck's proxy in "
            "1 turn, so nothing of its model was recorded") in recorded.stdout
    assert "a base URL written in the code" in recorded.stdout
