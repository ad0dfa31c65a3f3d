"""App targets (docs/targets.md): an app in a subprocess, built on the official `openai`
and `anthropic` SDKs, talks to the scripted model server through turncheck's recording
proxy; what is recorded replays with the server stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAKE_KEY, run_paths, write_suite
from tests.support.scripted_server import ScriptedServer, _usage
from tests.support.target_helpers import (
    MEMORY_APP,
    STREAM_APP,
    THREE_TURNS,
    comparable,
    http_target,
    memory_reply,
    upstream_env,
)
from turncheck.engine.pricing import Pricer
from turncheck.formats.budget import BudgetLimits
from turncheck.report.results import Status
from turncheck.report.spend import Usage
from turncheck.targets.proxy import PLACEHOLDER_KEY

API_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
             "anthropic": "/v1/messages"}


def usage_sent(server: ScriptedServer) -> Usage:
    """The sum of the usage the scripted server reported to the app."""
    total = Usage()
    for request in server.requests:
        input_tokens, output_tokens = _usage(None, request.json, memory_reply(request.json))
        total += Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return total


@pytest.mark.parametrize(("api", "stream"), [("chat", "0"), ("chat", "1"), ("responses", "0"),
                                             ("responses", "1"), ("anthropic", "0"),
                                             ("anthropic", "1")])
def test_an_sdk_app_records_then_replays_with_the_upstream_stopped(
        tmp_path: Path, api: str, stream: str) -> None:
    suite = write_suite(tmp_path, http_target({"APP_API": api, "APP_STREAM": stream,
                                               "APP_CALLS": "2"}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        env = upstream_env(server.base_url)
        recorded = run_paths([suite], server, "record", env=env)
        sent = usage_sent(server)
        paths = {request.path for request in server.requests}
        keys = {request.headers.get("authorization") or request.headers.get("x-api-key")
                for request in server.requests}
    replayed = run_paths([suite], None, "replay", env=env)

    [result] = recorded.suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error
    assert [t.response for t in result.turns] == ["Noted.", "Noted.", "You are Ada from Paris."]
    assert comparable(replayed) == comparable(recorded)
    # Two model calls per user turn, every one of them counted and priced.
    assert len(server.requests) == 6 and paths == {API_PATHS[api]}
    assert result.usage == sent and result.usage.input_tokens > 0
    assert result.cost_usd is not None and result.cost_usd > 0
    # The app had placeholder keys; upstream got turncheck's own, which no cassette holds.
    expected_key = "sk-ant-test-SECRET-KEY-456" if api == "anthropic" else f"Bearer {FAKE_KEY}"
    assert keys == {expected_key}
    cassette = (tmp_path / "scripted.eval.cassette.yaml").read_text()
    assert "SECRET-KEY" not in cassette and "placeholder" not in cassette


def test_an_app_that_calls_the_model_twice_per_turn_shows_it_in_usage_and_cost(
        tmp_path: Path) -> None:
    reports, sent = {}, {}
    for calls in ("1", "2"):
        folder = tmp_path / calls
        folder.mkdir()
        suite = write_suite(folder, http_target({"APP_CALLS": calls}) + THREE_TURNS)
        with ScriptedServer(default_reply=memory_reply) as server:
            reports[calls] = run_paths([suite], server, "record",
                                       env=upstream_env(server.base_url))
            sent[calls] = (usage_sent(server), len(server.requests))
    once, twice = (reports[c].suites[0].evals[0] for c in ("1", "2"))
    assert (once.usage, twice.usage) == (sent["1"][0], sent["2"][0])
    assert (sent["1"][1], sent["2"][1]) == (3, 6)
    assert twice.usage.input_tokens > 2 * once.usage.input_tokens
    assert [t.usage.input_tokens > 0 for t in twice.turns] == [True] * 3
    pricer = Pricer.at(reports["1"].price_source.timestamp)
    assert once.cost_usd == pricer.cost(once.usage, "gpt-4o-mini", "openai")
    assert twice.cost_usd is not None and once.cost_usd is not None
    assert twice.cost_usd > 2 * once.cost_usd


def test_a_changed_request_in_replay_is_a_miss_that_names_it(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        env = upstream_env(server.base_url)
        run_paths([suite], server, "record", env=env)
    # The app's code changes its system prompt: its model calls are no longer recorded.
    suite.write_text(http_target({"APP_SYSTEM_PROMPT": "You are terse."}) + THREE_TURNS)
    report = run_paths([suite], None, "replay", env=env)

    [result] = report.suites[0].evals
    assert result.status == Status.ERROR
    assert result.error is not None
    assert "the app's model call: no recording for POST " in result.error
    assert f"{env['OPENAI_BASE_URL']}/chat/completions" in result.error
    assert "model gpt-4o-mini" in result.error and "body sha256 " in result.error
    assert "record it with: turncheck record" in result.error


def test_a_stateful_app_fails_when_the_session_id_is_not_sent_back(tmp_path: Path) -> None:
    without_id = http_target({}, body='{message: "{{ last_message }}"}')
    suite = write_suite(tmp_path, without_id + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
    [result] = report.suites[0].evals
    assert result.status == Status.FAIL
    assert result.turns[-1].response == "I know nothing about you."


def test_a_session_id_taken_from_the_apps_first_reply_keeps_the_memory(tmp_path: Path) -> None:
    from_reply = http_target({}, session_line='session: {from: "json:session_id"}')
    suite = write_suite(tmp_path, from_reply + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url))
    [result] = report.suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error


def _memory_suite(target: str) -> str:
    return f"""\
metadata:
  name: memory
  target:
{target}
    session: client
    stateful: true
{THREE_TURNS}"""


@pytest.mark.parametrize("target", [
    "    python: memory_app:answer",
    "    python: memory_app:answer_async",
    f"    command: [{sys.executable}, {MEMORY_APP}]",
])
def test_python_and_command_targets_pass_the_same_three_turn_eval(
        tmp_path: Path, target: str) -> None:
    (tmp_path / "memory_app.py").write_text(MEMORY_APP.read_text())
    suite = write_suite(tmp_path, _memory_suite(target))
    report = run_paths([suite], None, "replay")
    [result] = report.suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error
    assert report.suites[0].model == "app"
    if target.endswith(":answer"):  # it reports the tool calls it ran itself
        assert [c.name for t in result.turns for c in t.tool_calls] == ["remember"] * 3


def test_without_the_session_the_python_target_forgets(tmp_path: Path) -> None:
    (tmp_path / "memory_app.py").write_text(MEMORY_APP.read_text())
    suite = write_suite(tmp_path, _memory_suite("    python: memory_app:answer_async")
                        .replace("    session: client\n", ""))
    [result] = run_paths([suite], None, "replay").suites[0].evals
    assert result.status == Status.FAIL


STREAM_EVAL = """\
evals:
  - name: welcomed-back
    prompt: Hi
    checks:
      - match: "*Welcome back s-1*"
      - prompt: Hi again
        checks:
          - match: "*Welcome back s-1*"
"""


@pytest.mark.parametrize(("kind", "reply"), [("sse", "delta"), ("ndjson", "delta"),
                                              ("chunked", None)])
def test_a_streamed_reply_is_one_answer_with_its_time_to_first_token(
        tmp_path: Path, kind: str, reply: str | None) -> None:
    reply_line = f"      reply: {reply}\n" if reply else ""
    suite = write_suite(tmp_path, f"""\
metadata:
  name: streaming
  target:
    start: {sys.executable} {STREAM_APP} {{port}}
    ready: /health
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
{reply_line}    session: {{from: "header:X-Session-Id"}}
    env: {{APP_FORMAT: {kind}}}
""" + STREAM_EVAL)
    [result] = run_paths([suite], None, "replay").suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 2), result.error
    first, second = result.turns
    assert (first.response, second.response) == ("Hello, new visitor", "Welcome back s-1")
    assert first.first_token_ms is not None
    assert 0 < first.first_token_ms <= first.latency_ms


def test_turncheck_record_then_run_on_an_app_suite_from_the_command_line(
        tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({"APP_API": "responses", "APP_STREAM": "1"})
                        + THREE_TURNS, "bot.eval.yaml")
    with ScriptedServer(default_reply=memory_reply) as server:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
               "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
               **upstream_env(server.base_url), "OPENAI_API_KEY": FAKE_KEY}
        recorded = _turncheck(["record", str(suite), "--json", str(tmp_path / "r.json")], env)
    replayed = _turncheck(["run", str(suite), "--json", str(tmp_path / "p.json")], env)

    assert recorded.returncode == 0 and replayed.returncode == 0, replayed.stdout
    assert "remembers" in replayed.stdout
    documents = [json.loads((tmp_path / name).read_text()) for name in ("r.json", "p.json")]
    evals = [d["suites"][0]["evals"][0] for d in documents]
    assert [(e["status"], e["passed_on_turn"], e["usage"]) for e in evals] == \
        [("pass", 3, evals[0]["usage"])] * 2
    assert [t["app_model_calls"] for t in evals[1]["turns"]] == [1, 1, 1]


def _turncheck(arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *arguments], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


ENV_DUMP = """\
import json, os, sys
for line in sys.stdin:
    print(json.dumps({"text": json.dumps(dict(os.environ))}), flush=True)
"""


def test_the_app_sees_placeholder_keys_and_none_of_turncheck_s_secrets(tmp_path: Path) -> None:
    (tmp_path / "dump_env.py").write_text(ENV_DUMP)
    suite = write_suite(tmp_path, f"""\
metadata:
  name: env
  target:
    command: [{sys.executable}, dump_env.py]
    env: {{APP_MODE: test}}
evals:
  - prompt: Hi
    checks:
      - match: "*"
""")
    ours = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "OPENAI_API_KEY": FAKE_KEY,
            "ANTHROPIC_API_KEY": "sk-ant-SECRET-789", "GITHUB_TOKEN": "ghs_SECRET",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "SECRET", "INPUT_GITHUB-TOKEN": "ghs_SECRET2",
            "MY_SERVICE_PASSWORD": "SECRET-pw"}
    [result] = run_paths([suite], None, "replay", env=ours).suites[0].evals
    seen = json.loads(result.turns[0].response)
    assert set(seen) - {"LC_CTYPE"} == {  # Python may set LC_CTYPE itself
        "PATH", "HOME", "APP_MODE", "PYTHONUNBUFFERED", "OPENAI_BASE_URL", "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
        # Replay: the guards that keep the app on the machine (replay_guard.py).
        "PYTHONPATH", "TURNCHECK_REPLAY_REFUSED", "NODE_OPTIONS", "NODE_USE_ENV_PROXY",
        "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
        "http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    assert "turncheck-replay-guard-" in seen["PYTHONPATH"]
    assert seen["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert seen["OPENAI_API_KEY"] == seen["ANTHROPIC_API_KEY"]
    assert seen["OPENAI_API_KEY"].startswith(PLACEHOLDER_KEY + "-")  # made for the run
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert "SECRET" not in result.turns[0].response


GREETER = """\
import json, sys
greeting = open("greeting.txt").read().strip()
for line in sys.stdin:
    print(json.dumps(f"{greeting}, {json.loads(line)['last_message']}"), flush=True)
"""


def _greeter_suite(tmp_path: Path, setup: str) -> Path:
    (tmp_path / "greeter.py").write_text(GREETER)
    return write_suite(tmp_path, f"""\
metadata:
  name: greeter
  target:
    setup: {setup}
    command: [{sys.executable}, greeter.py]
evals:
  - prompt: Ada
    checks:
      - match: "Hello, Ada"
""")


def test_setup_runs_in_the_suites_folder_before_the_app_starts(tmp_path: Path) -> None:
    suite = _greeter_suite(tmp_path, "echo Hello > greeting.txt")
    [result] = run_paths([suite], None, "replay", env={"PATH": os.environ["PATH"]}
                         ).suites[0].evals
    assert result.status == Status.PASS, result.error


def test_a_failing_setup_is_an_error_with_its_output(tmp_path: Path) -> None:
    suite = _greeter_suite(tmp_path, "'echo cannot install >&2; exit 4'")
    [result] = run_paths([suite], None, "replay", env={"PATH": os.environ["PATH"]}
                         ).suites[0].evals
    assert result.status == Status.ERROR
    assert result.error is not None
    assert "setup (echo cannot install >&2; exit 4) exited with code 4 during setup" in \
        result.error
    assert "its last output: cannot install" in result.error


def test_an_eval_may_talk_to_its_own_target_beside_model_evals(tmp_path: Path) -> None:
    (tmp_path / "memory_app.py").write_text(MEMORY_APP.read_text())
    suite = write_suite(tmp_path, """\
metadata:
  name: mixed
  model: gpt-4o-mini
evals:
  - name: model
    prompt: Hi model
    checks:
      - match: "Model says hi"
  - name: app
    prompt: What do you know about me?
    target: {python: "memory_app:answer_async"}
    checks:
      - match: "I know nothing about you."
""")
    with ScriptedServer(default_reply="Model says hi") as server:
        report = run_paths([suite], server, "record")
        assert len(server.requests) == 1
    assert [(e.name, e.status) for e in report.suites[0].evals] == \
        [("model", Status.PASS), ("app", Status.PASS)]


def test_repeated_samples_of_an_app_are_recorded_apart_and_replayed(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({}).replace(
        "  model: gpt-4o-mini\n", "  model: gpt-4o-mini\n  repeat: 2\n") + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        env = upstream_env(server.base_url)
        recorded = run_paths([suite], server, "record", env=env)
        assert len(server.requests) == 6  # identical conversations, one recording each
    replayed = run_paths([suite], None, "replay", env=env)
    assert comparable(replayed) == comparable(recorded)
    [result] = replayed.suites[0].evals
    assert [s.status for s in result.samples] == [Status.PASS, Status.PASS]
    assert "x-turncheck-sample" in (tmp_path / "scripted.eval.cassette.yaml").read_text()


def test_live_mode_passes_the_apps_calls_through_without_a_cassette(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({"APP_API": "anthropic"}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        report = run_paths([suite], server, "live", env=upstream_env(server.base_url))
        assert len(server.requests) == 3
    [result] = report.suites[0].evals
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error
    assert result.usage.input_tokens > 0
    assert not (tmp_path / "scripted.eval.cassette.yaml").exists()


def test_an_app_turncheck_does_not_start_is_reached_by_its_url(tmp_path: Path) -> None:
    with ScriptedServer(default_reply=memory_reply) as app:
        suite = write_suite(tmp_path, f"""\
metadata:
  name: running-app
  target:
    ready: {app.base_url}/embeddings
    http:
      url: {app.base_url}/chat/completions
      headers: {{x-conversation: "{{{{ session_id }}}}"}}
      body: {{model: served, messages: "{{{{ messages }}}}"}}
      reply: choices.0.message.content
    session: client
""" + THREE_TURNS)
        [result] = run_paths([suite], None, "replay").suites[0].evals
        sent = [request.json["messages"] for request in app.requests
                if request.path.endswith("/chat/completions")]
        conversations = {request.headers["x-conversation"] for request in app.requests
                         if request.path.endswith("/chat/completions")}
    assert (result.status, result.passed_on_turn) == (Status.PASS, 3), result.error
    assert [len(messages) for messages in sent] == [1, 3, 5]  # the whole history each turn
    assert len(conversations) == 1 and "" not in conversations


def test_an_upstream_rate_limit_reaches_the_app_which_retries_and_is_not_recorded(
        tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        server.add_rule(fault="rate_limit", retry_after="0", times=1)
        recorded = run_paths([suite], server, "record", env=upstream_env(server.base_url))
        assert len(server.requests) == 4  # the SDK's retry went through the proxy
        env = upstream_env(server.base_url)
    replayed = run_paths([suite], None, "replay", env=env)
    assert comparable(replayed) == comparable(recorded)
    assert "rate limited" not in (tmp_path / "scripted.eval.cassette.yaml").read_text()


def test_two_trees_with_the_same_python_module_each_run_their_own_code(tmp_path: Path) -> None:
    suites = []
    for side in ("base", "head"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "bot.py").write_text(f"def answer():\n    return 'I am {side}'\n")
        suites.append(write_suite(folder, f"""\
metadata:
  name: {side}
  target: {{python: "bot:answer"}}
evals:
  - prompt: Who are you?
    checks:
      - match: "I am {side}"
"""))
    for order in (suites, suites[::-1]):
        report = run_paths(order, None, "replay")
        assert [e.status for s in report.suites for e in s.evals] == [Status.PASS] * 2


def test_a_budget_stops_the_apps_own_calls_before_they_are_sent(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, http_target({}) + THREE_TURNS)
    with ScriptedServer(default_reply=memory_reply) as server:
        report = run_paths([suite], server, "record", env=upstream_env(server.base_url),
                           budget=BudgetLimits(max_live_tokens=100))
        assert server.requests == []
    [result] = report.suites[0].evals
    assert (result.status, result.reason) == (Status.SKIPPED, "budget"), result.error
    assert report.live_tokens == 0


def test_the_suites_base_url_is_where_the_apps_openai_calls_go(tmp_path: Path) -> None:
    with ScriptedServer(default_reply=memory_reply) as server:
        suite = write_suite(tmp_path, http_target({}).replace(
            "  model: gpt-4o-mini\n",
            f"  model: gpt-4o-mini\n  base_url: {server.base_url}\n") + THREE_TURNS)
        recorded = run_paths([suite], None, "record", provider=None)
        assert len(server.requests) == 3  # no OPENAI_BASE_URL: the suite's base_url
    replayed = run_paths([suite], None, "replay", provider=None)
    assert comparable(replayed) == comparable(recorded)
    assert recorded.suites[0].evals[0].passed_on_turn == 3


STREAM_PROTOCOL = """\
cases:
  - id: visitor
turns:
  - id: hello
    prompt: Hi
    scorers:
      - id: greeted
        match: "*Hello*"
        weight: 1
"""


def test_a_protocol_turn_against_an_app_keeps_what_an_eval_turn_keeps(tmp_path: Path) -> None:
    target = f"""\
  target:
    start: {sys.executable} {STREAM_APP} {{port}}
    ready: /health
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
      reply: delta
    session: {{from: "header:X-Session-Id"}}
    env: {{APP_FORMAT: sse}}
"""
    evals = write_suite(tmp_path, "metadata:\n  name: as-eval\n" + target + STREAM_EVAL)
    protocol = write_suite(tmp_path, "metadata:\n  name: as-protocol\n" + target
                           + STREAM_PROTOCOL, "protocol.eval.yaml")
    report = run_paths([evals, protocol], None, "replay")
    eval_turn = report.suites[0].evals[0].turns[0]
    [case] = report.protocols[0].cases
    assert case.status == Status.PASS, case.error
    answer_fields = {"first_token_ms", "app_model_calls", "app_calls", "rounds", "tool_calls"}
    as_eval, as_protocol = (turn.model_dump(include=answer_fields, exclude_defaults=True)
                            for turn in (eval_turn, case.turns[0]))
    assert as_protocol.keys() == as_eval.keys() == {"first_token_ms", "app_model_calls"}
    assert as_protocol["app_model_calls"] == 0
    assert 0 < as_protocol["first_token_ms"] <= case.turns[0].latency_ms
