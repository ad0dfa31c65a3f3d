"""App targets without starting anything (docs/targets.md): the suite syntax and its
line-precise diagnostics, the app's environment allow-list, the usage read from each
API's answers (streamed or not), and a streamed reply assembled into one."""

from __future__ import annotations

import json

import pytest

from turncheck.formats.suite_loader import parse_suite
from turncheck.formats.target import HttpTarget, Target
from turncheck.targets.http_target import HttpKind
from turncheck.targets.process import app_environment, argv_of, with_own_interpreter
from turncheck.targets.usage import usage_of

ISSUE_EXAMPLE = """\
metadata:
  name: support-bot
  model: gpt-4o-mini
  target:
    start: python app.py {port}
    ready: /health
    http:
      path: /chat
      body: {message: "{{ last_message }}", session_id: "{{ session_id }}"}
      reply: reply
    session: client
    stateful: true
    env: {APP_STREAM: "1"}
evals:
  - name: remembers-name
    prompt: My name is Ada.
    checks:
      - match: "*Your name is Ada*"
        prompt: What is my name?
        checks:
          - match: "*Your name is Ada*"
"""


def test_the_issues_suite_is_valid_and_keeps_its_target() -> None:
    loaded = parse_suite(ISSUE_EXAMPLE, "bot.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    target = loaded.suite.metadata.target
    assert target is not None and target.kind == "http" and target.stateful
    assert target.session == "client" and target.env == {"APP_STREAM": "1"}


def test_a_target_makes_the_model_optional_and_an_eval_may_override_it() -> None:
    text = ISSUE_EXAMPLE.replace("  model: gpt-4o-mini\n", "").replace(
        "  - name: remembers-name\n",
        "  - name: remembers-name\n    target: {python: 'bot.app:answer'}\n")
    loaded = parse_suite(text, "bot.eval.yaml")
    assert loaded.diagnostics == []
    assert loaded.suite is not None
    assert loaded.suite.metadata.model == "app"
    assert loaded.suite.evals[0].target is not None
    assert loaded.suite.evals[0].target.python == "bot.app:answer"


@pytest.mark.parametrize(("change", "line", "message"), [
    (("      reply: reply\n", "      reply: reply\n    python: a.b:c\n"), 5,
     "exactly one of http, python or command (found http, python)"),
    (('{message: "{{ last_message }}"', '{message: "{{ last_message "'), 9,
     "template syntax error"),
    (("    env: {APP_STREAM: \"1\"}", "    env: {OPENAI_API_KEY: \"x\"}"), 13,
     "OPENAI_API_KEY is set by turncheck"),
    (("    session: client", "    session: {from: body}"), 11, 'session must be "client"'),
    (("    ready: /health\n", "    ready: /health\n    ready_timeout: 0\n"), 7,
     "greater than 0"),
    (("      path: /chat", "      path: chat"), 8, "http.path must start with /"),
    (("    start: python app.py {port}\n", ""), 5, "needs start"),
    (("    stateful: true", "    stateful: yes please"), 12, "boolean"),
])
def test_a_wrong_target_is_reported_at_its_line(
        change: tuple[str, str], line: int, message: str) -> None:
    assert change[0] in ISSUE_EXAMPLE
    loaded = parse_suite(ISSUE_EXAMPLE.replace(*change), "bot.eval.yaml")
    errors = [d for d in loaded.diagnostics if d.is_error]
    assert len(errors) == 1, errors
    assert message in errors[0].message
    assert errors[0].line == line, errors[0]


@pytest.mark.parametrize(("target", "concurrently"), [
    ({"python": "bot:answer"}, True),
    ({"python": "bot:answer", "concurrent": False}, False),
    ({"command": "node bot.js"}, False),  # an app answering in order works unchanged
    ({"command": "node bot.js", "concurrent": True}, True),
    ({"http": {"url": "http://app/chat"}}, True),  # its calls attributed by their messages
    ({"http": {"url": "http://app/chat"}, "concurrent": False}, False),
    ({"http": {"url": "http://app/chat"}, "forwards_header": True}, True),
])
def test_which_targets_run_their_turns_concurrently(
        target: dict[str, object], concurrently: bool) -> None:
    assert Target.model_validate(target).runs_concurrently is concurrently


def test_tool_checks_of_an_app_need_no_declared_tools() -> None:
    text = ISSUE_EXAMPLE.replace('      - match: "*Your name is Ada*"\n        prompt',
                                 '      - tool_call: lookup\n        prompt', 1)
    assert [d for d in parse_suite(text, "bot.eval.yaml").diagnostics if d.is_error] == []


def test_the_apps_environment_holds_no_secret_of_turncheck() -> None:
    ours = {"PATH": "/usr/bin", "HOME": "/home/ci", "LANG": "C.UTF-8",
            "OPENAI_API_KEY": "sk-real", "ANTHROPIC_API_KEY": "sk-ant-real",
            "GITHUB_TOKEN": "ghs_x", "ACTIONS_RUNTIME_TOKEN": "t", "MY_SECRET": "s",
            "INPUT_GITHUB-TOKEN": "ghs_y", "OPENAI_BASE_URL": "https://api.openai.com/v1"}
    proxy = {"OPENAI_BASE_URL": "http://127.0.0.1:9/openai/v1", "OPENAI_API_KEY": "placeholder"}
    env = app_environment(ours, {"APP_MODE": "test"}, proxy, 8123)
    # PATH ends with the folder of turncheck's own interpreter (the app finds `python`).
    assert env == {"PATH": with_own_interpreter("/usr/bin"), "HOME": "/home/ci",
                   "LANG": "C.UTF-8", "APP_MODE": "test", "PYTHONUNBUFFERED": "1",
                   "PORT": "8123", **proxy}


def test_the_port_is_filled_into_the_start_command() -> None:
    assert argv_of("python app.py {port}", 8123) == ["/bin/sh", "-c", "python app.py 8123"]
    assert argv_of(["node", "server.js", "--port={port}"], 9) == \
        ["node", "server.js", "--port=9"]


def _sse(*events: object) -> bytes:
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + \
        b"data: [DONE]\n\n"


@pytest.mark.parametrize(("api", "content_type", "body", "expected"), [
    ("openai", "application/json",
     json.dumps({"model": "gpt-4o-mini-2024", "usage": {
         "prompt_tokens": 12, "completion_tokens": 5,
         "prompt_tokens_details": {"cached_tokens": 4}}}).encode(),
     ("gpt-4o-mini-2024", 12, 5, 4)),
    ("openai", "text/event-stream",
     _sse({"model": "m", "choices": [{"delta": {"content": "Hi"}}]},
          {"model": "m", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}),
     ("m", 7, 2, 0)),
    ("openai", "text/event-stream",
     _sse({"type": "response.created", "response": {"model": "r", "usage": None}},
          {"type": "response.output_text.delta", "delta": "Hi"},
          {"type": "response.completed", "response": {"model": "r", "usage": {
              "input_tokens": 9, "output_tokens": 3, "total_tokens": 12,
              "input_tokens_details": {"cached_tokens": 1}}}}),
     ("r", 9, 3, 1)),
    ("anthropic", "application/json",
     json.dumps({"model": "claude", "usage": {"input_tokens": 10, "output_tokens": 4,
                                              "cache_read_input_tokens": 6}}).encode(),
     ("claude", 16, 4, 6)),
    ("anthropic", "text/event-stream",
     _sse({"type": "message_start", "message": {"model": "claude", "usage": {
         "input_tokens": 11, "output_tokens": 1}}},
          {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}},
          {"type": "message_delta", "usage": {"output_tokens": 8}}),
     ("claude", 11, 8, 0)),
    ("openai", "application/json",
     json.dumps({"model": "text-embedding-3-small", "usage": {"prompt_tokens": 5,
                                                              "total_tokens": 5}}).encode(),
     ("text-embedding-3-small", 5, 0, 0)),
])
def test_the_usage_of_each_api_is_read_from_its_answer(
        api: str, content_type: str, body: bytes, expected: tuple[object, ...]) -> None:
    call = usage_of(api, "/v1/x", "asked-model", content_type, body, replayed=False)
    assert (call.model, call.input_tokens, call.output_tokens,
            call.cached_input_tokens) == expected


def test_an_answer_without_usage_reports_none() -> None:
    call = usage_of("openai", "/v1/chat/completions", "gpt-4o-mini", "text/event-stream",
                    _sse({"choices": [{"delta": {"content": "Hi"}}]}), replayed=False)
    assert (call.model, call.input_tokens, call.reported) == ("gpt-4o-mini", None, False)


def _kind(**spec: object) -> HttpKind:
    return HttpKind(HttpTarget.model_validate({"url": "http://app/chat", **spec}), None)


@pytest.mark.parametrize(("reply", "content_type", "body", "text"), [
    ("delta", "text/event-stream", b'data: {"delta": "Hel"}\n\ndata: {"delta": "lo"}\n\n'
     b"data: [DONE]\n\n", "Hello"),
    (None, "text/event-stream", b"data: Hel\n\ndata: lo\n\n", "Hello"),
    ("choices.0.delta.content", "text/event-stream",
     _sse({"choices": [{"delta": {"content": "Hel"}}]},
          {"choices": [{"delta": {"content": "lo"}}]}, {"choices": []}), "Hello"),
    ("token", "application/x-ndjson", b'{"token": "Hel"}\n{"token": "lo"}\n{"done": true}\n',
     "Hello"),
    (None, "text/plain", b"Hello", "Hello"),
    ("data.answer", "application/json", b'{"data": {"answer": "Hello"}}', "Hello"),
])
def test_a_streamed_reply_is_assembled_into_one(
        reply: str | None, content_type: str, body: bytes, text: str) -> None:
    spec = {"reply": reply} if reply else {}
    assert _kind(**spec)._parse(body, content_type).text == text


def test_a_reply_without_the_text_at_its_path_is_a_clear_error() -> None:
    from turncheck.targets.base import TargetError

    with pytest.raises(TargetError, match=r'the app\'s reply has nothing at "data\.answer"'):
        _kind(reply="data.answer")._parse(b'{"data": {}}', "application/json")
    with pytest.raises(TargetError, match="the app's reply is not JSON: <html>"):
        _kind(reply="answer")._parse(b"<html>", "text/html")


def test_python_in_a_start_command_is_turncheck_s_own_interpreter() -> None:
    """`{python}` runs the app with turncheck's interpreter, whatever `python` comes first
    on the user's PATH (a pyenv shim without turncheck's packages broke the examples)."""
    import shlex
    import sys

    from turncheck.targets.process import argv_of

    assert argv_of("{python} app.py {port}", 8123) == [
        "/bin/sh", "-c", f"{shlex.quote(sys.executable)} app.py 8123"]
    assert argv_of(["{python}", "app.py"], None) == [sys.executable, "app.py"]
