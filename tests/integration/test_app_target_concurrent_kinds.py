"""Python and command targets run several conversations at once (docs/targets.md,
"Concurrent turns"): the app has more than one turn in flight, every conversation still
gets its own answers, and each of the app's model calls counts in its own turn (by the
header naming it, or the user messages it carries), recorded and replayed. A command app
that dies mid-run fails the conversations it was answering, and the others keep their
results."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from tests.support.engine_helpers import FAST_RETRIES, run_paths, write_suite
from tests.support.scripted_server import Json, ScriptedServer, _content_text, conversation_of
from tests.support.target_helpers import APPS, MEMORY_APP, upstream_env
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, Report

CONCURRENT_APP = APPS / "concurrent_app.py"
CONVERSATIONS = 6


def model_reply(body: Json) -> str:
    """The scripted model: names the user message it was asked about."""
    users = [_content_text(m.get("content")) for m in conversation_of(body)
             if m.get("role") == "user"]
    return f"model saw {users[-1]}"


def _said(n: int) -> list[str]:
    return [f"I am conv-{n}.", f"second of conv-{n}", f"third of conv-{n}"]


def _expected(n: int) -> list[str]:
    """Each turn's reply: the conversation's own messages, then the model's answer."""
    said = _said(n)
    return [f"{' | '.join(said[:k + 1])} -> model saw {said[k]}" for k in range(3)]


def _eval(n: int) -> str:
    # Only the third answer passes: the first two fire the follow-ups.
    last = _expected(n)[2]
    first, second, third = _said(n)
    return f"""\
  - name: conversation-{n}
    prompt: "{first}"
    checks:
      - match: "{last}"
      - prompt: "{second}"
        checks:
          - match: "{last}"
          - prompt: "{third}"
            checks:
              - match: "{last}"
"""


def _suite(folder: Path, target: str, in_flight: Path, evals: str = "") -> Path:
    (folder / "concurrent_app.py").write_text(CONCURRENT_APP.read_text())
    return write_suite(folder, f"""\
metadata:
  name: concurrent
  model: gpt-4o-mini
  vars: {{inflight_file: "{in_flight}", delay: "0.1"}}
  target:
{target}
evals:
""" + (evals or "".join(_eval(n) for n in range(CONVERSATIONS))))


def _outcomes(report: Report) -> list[tuple[str, Status, int | None, list[str], list[int | None]]]:
    return [(e.name, e.status, e.passed_on_turn, [t.response for t in e.turns],
             [t.app_model_calls for t in e.turns]) for e in report.suites[0].evals]


EXPECTED = [(f"conversation-{n}", Status.PASS, 3, _expected(n), [1, 1, 1])
            for n in range(CONVERSATIONS)]
TARGETS = {
    "python sync": ("    python: concurrent_app:answer\n", False),
    "python async": ("    python: concurrent_app:answer_async\n", False),
    "python in the worker process": ("    python: concurrent_app:answer\n", True),
    "command": (f"    command: [{sys.executable}, concurrent_app.py]\n    concurrent: true\n",
                False),
    "command, its calls naming no turn": (
        f"    command: [{sys.executable}, concurrent_app.py]\n    concurrent: true\n"
        '    env: {APP_FORWARD_ID: "0"}\n', False),
}


def _run(suite: Path, mode: str, base_url: str, isolate: bool) -> Report:
    # The worker process imports this tree's turncheck (the app gets PYTHONPATH).
    env = {**upstream_env(base_url), "PATH": os.environ["PATH"],
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    session = dataclasses.replace(FAST_RETRIES, isolate_apps=isolate)
    return run_paths([suite], None, mode, base_url=base_url, env=env,  # type: ignore[arg-type]
                     session=session)


@pytest.mark.parametrize("name", list(TARGETS))
def test_conversations_overlap_and_each_gets_its_own_answers_and_calls(
        tmp_path: Path, name: str) -> None:
    target, isolate = TARGETS[name]
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, target, in_flight)
    with ScriptedServer(default_reply=model_reply) as server:
        recorded = _run(suite, "record", server.base_url, isolate)
        assert len(server.requests) == CONVERSATIONS * 3
        base_url = server.base_url
    assert _outcomes(recorded) == EXPECTED, [e.error for e in recorded.suites[0].evals]
    assert int(in_flight.read_text()) > 1  # the app answered several turns at once

    replayed = _run(suite, "replay", base_url, isolate)  # the server is stopped
    assert _outcomes(replayed) == EXPECTED, [e.error for e in replayed.suites[0].evals]
    assert [e.usage for e in replayed.suites[0].evals] == \
        [e.usage for e in recorded.suites[0].evals]


def test_a_python_target_with_concurrent_false_answers_one_turn_at_a_time(
        tmp_path: Path) -> None:
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, "    python: concurrent_app:answer\n    concurrent: false\n",
                   in_flight)
    with ScriptedServer(default_reply=model_reply) as server:
        report = _run(suite, "record", server.base_url, False)
    assert _outcomes(report) == EXPECTED, [e.error for e in report.suites[0].evals]
    assert int(in_flight.read_text()) == 1


def memory_app_eval(tmp_path: Path, target_line: str) -> EvalResult:
    """The one eval of a suite whose target is the memory app as a command, with one more
    line in its target; replayed with no model server."""
    (tmp_path / "memory_app.py").write_text(MEMORY_APP.read_text())
    suite = write_suite(tmp_path, f"""\
metadata:
  name: memory
  target:
    command: [{sys.executable}, memory_app.py]
    {target_line}
evals:
  - name: one
    prompt: Hello
    checks:
      - match: Noted.
""")
    [result] = run_paths([suite], None, "replay").suites[0].evals
    return result


def test_a_command_app_that_answers_in_order_needs_no_change(tmp_path: Path) -> None:
    """Without `concurrent`, a command app's lines go one at a time and carry no id."""
    result = memory_app_eval(tmp_path, "session: client")
    assert result.status is Status.PASS, result.error


def test_concurrent_true_with_an_app_that_does_not_echo_the_id_says_so(
        tmp_path: Path) -> None:
    result = memory_app_eval(tmp_path, "concurrent: true")
    assert result.status is Status.ERROR
    assert 'each reply is a JSON object with the "id" of the line it answers' in \
        (result.error or ""), result.error


def _one_turn(name: str, prompt: str, expected: str) -> str:
    return f"""\
  - name: {name}
    prompt: "{prompt}"
    checks:
      - match: "{expected}"
"""


def test_a_crash_fails_the_conversations_in_flight_and_keeps_the_others(
        tmp_path: Path) -> None:
    quick = [_one_turn(f"quick-{n}", f"quick {n}", f"quick {n} -> quick") for n in range(3)]
    slow = [_one_turn(f"slow-{n}", f"slow {n}", "never answered") for n in range(3)]
    crash = _one_turn("crash", "crash", "never answered")
    suite = _suite(tmp_path, f"    command: [{sys.executable}, concurrent_app.py]\n"
                   "    concurrent: true\n", tmp_path / "in_flight",
                   "".join(quick + slow) + crash)
    suite.write_text(suite.read_text().replace(
        'delay: "0.1"', 'delay: "0.1", crash_when: "3", answered_first: "3"'))

    report = run_paths([suite], None, "replay", concurrency=8)

    results: dict[str, EvalResult] = {e.name: e for e in report.suites[0].evals}
    for n in range(3):
        kept = results[f"quick-{n}"]
        assert (kept.status, kept.turns[0].response) == (Status.PASS, f"quick {n} -> quick")
    for name in ["slow-0", "slow-1", "slow-2", "crash"]:
        failed = results[name]
        assert failed.status is Status.ERROR, (name, failed.status, failed.error)
        assert "exited with code 3 during this turn" in (failed.error or ""), failed.error
