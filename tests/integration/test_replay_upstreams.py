"""Issue 44, item 5: an app's recordings replay without naming their upstream again.

Recorded with OPENAI_BASE_URL / ANTHROPIC_BASE_URL pointing at a local server (a gateway,
a local model), a replay with no base URL configured replays what the cassette holds; a
different upstream configured explicitly still misses, with the hint that is right for
the provider (ANTHROPIC_BASE_URL for Anthropic, which `--base-url` does not change), and
a `--repeat N` miss names the `--repeat N` its record needs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_server import ScriptedServer
from tests.support.target_helpers import THREE_TURNS, http_target, memory_reply

KEYS = {"OPENAI_API_KEY": "sk-test-1", "ANTHROPIC_API_KEY": "sk-ant-test-2"}


def clean_env(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    return {**env, **extra}


def turncheck(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def recorded_suite(tmp_path: Path, api: str, *record_args: str) -> tuple[Path, str]:
    """A suite whose app (the `api` SDK) was recorded against a local server: its folder
    and the server's base URL (the server is gone afterwards)."""
    (tmp_path / "bot.eval.yaml").write_text(http_target({"APP_API": api}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        base = server.base_url
        env = clean_env(**KEYS, OPENAI_BASE_URL=base,
                        ANTHROPIC_BASE_URL=base.removesuffix("/v1"))
        recorded = turncheck(tmp_path, env, "record", "bot.eval.yaml", *record_args)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    return tmp_path, base


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_replay_with_no_base_url_replays_what_was_recorded_elsewhere(
        tmp_path: Path, api: str) -> None:
    folder, _ = recorded_suite(tmp_path, api)
    replayed = turncheck(folder, clean_env(), "run", "bot.eval.yaml")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no recording" not in replayed.stdout


def test_another_openai_upstream_named_misses_with_the_base_url_hint(tmp_path: Path) -> None:
    folder, base = recorded_suite(tmp_path, "chat")
    replayed = turncheck(folder, clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1"), "run",
                         "bot.eval.yaml")
    assert replayed.returncode != 0
    assert f"whose recordings were made against {base}: replay with --base-url {base}" \
        in replayed.stdout, replayed.stdout


def test_an_anthropic_miss_names_anthropic_base_url_and_following_it_works(
        tmp_path: Path) -> None:
    folder, base = recorded_suite(tmp_path, "anthropic")
    replayed = turncheck(folder, clean_env(ANTHROPIC_BASE_URL="http://127.0.0.1:9"), "run",
                         "bot.eval.yaml")
    assert replayed.returncode != 0
    host = base.removesuffix("/v1")
    assert f"replay with ANTHROPIC_BASE_URL={host} in turncheck's environment" \
        in replayed.stdout, replayed.stdout
    assert "--base-url" not in replayed.stdout
    followed = turncheck(folder, clean_env(ANTHROPIC_BASE_URL=host), "run", "bot.eval.yaml")
    assert followed.returncode == 0, followed.stdout + followed.stderr


def test_a_repeat_miss_names_the_repeat_its_record_needs(tmp_path: Path) -> None:
    folder, _ = recorded_suite(tmp_path, "chat")
    replayed = turncheck(folder, clean_env(), "run", "bot.eval.yaml", "--repeat", "3")
    assert replayed.returncode != 0
    command = "turncheck record --repeat 3 bot.eval.yaml --prune"
    assert f"record it with: {command}" in replayed.stdout, replayed.stdout
    with ScriptedServer(default_reply=memory_reply) as server:  # the upstream, back
        env = clean_env(**KEYS, OPENAI_BASE_URL=server.base_url)
        recorded = turncheck(folder, env, *shlex.split(command)[1:])
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    again = turncheck(folder, clean_env(), "run", "bot.eval.yaml", "--repeat", "3")
    assert again.returncode == 0, again.stdout + again.stderr
