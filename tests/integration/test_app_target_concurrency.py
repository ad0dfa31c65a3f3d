"""An http app's conversations run at once by default, the app changed in nothing: each of
its model calls (official openai and anthropic SDKs, streamed or not) is counted in its
own turn by the user messages it carries, recorded under its own sample and replayed. An
app that forwards the turn header (`forwards_header`) is attributed by it. An app that
rewrites the messages goes one turn at a time, saying so once; repeats of one eval, whose
calls look the same, stay exact (docs/targets.md, "Concurrent turns")."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest

from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import Json, ScriptedServer
from tests.support.target_helpers import THREE_TURNS, http_target, memory_reply, upstream_env
from turncheck.report.results import Status
from turncheck.report.run import EvalResult, Report

CONVERSATIONS = 32
FALLBACK = "its turns now go to it one at a time"


def _suite(folder: Path, env: dict[str, str], extra: str = "",
           conversations: int = CONVERSATIONS) -> Path:
    """`conversations` evals of three turns: each its own first message, the same two
    follow-ups."""
    evals = "evals:\n" + "".join(
        THREE_TURNS.removeprefix("evals:\n").replace("name: remembers", f"name: remembers-{n}")
        .replace("My name is Ada.", f"My name is Ada ({n}).") for n in range(conversations))
    return write_suite(folder, http_target(env) + extra + evals)


def _turns(report: Report) -> list[tuple[str, Status, int | None, list[int | None]]]:
    return [(e.name, e.status, e.passed_on_turn, [t.app_model_calls for t in e.turns])
            for e in report.suites[0].evals]


def _guessed(report: Report) -> int:
    return sum(call.turn_guessed for e in report.suites[0].evals for t in e.turns
               for call in t.app_calls)


def _record_and_replay(suite: Path, calls: int) -> tuple[Report, Report]:
    with ScriptedServer(default_reply=memory_reply) as server:
        server.set_latency(0.1)
        recorded = run_paths([suite], server, "record", env=upstream_env(server.base_url),
                             concurrency=CONVERSATIONS)
        assert len(server.requests) == calls
        base_url = server.base_url
    replayed = run_paths([suite], None, "replay", base_url=base_url,  # the server is stopped
                         env=upstream_env(base_url), concurrency=CONVERSATIONS)
    return recorded, replayed


@pytest.mark.parametrize(("api", "stream", "calls"), [
    ("chat", "0", 2), ("chat", "1", 1), ("anthropic", "0", 1), ("anthropic", "1", 2)])
def test_conversations_run_at_once_by_default_and_each_call_counts_in_its_own_turn(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, api: str, stream: str,
        calls: int) -> None:
    """`calls` model calls a turn: the second sends the answer back, asking for a review."""
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, {"APP_API": api, "APP_STREAM": stream, "APP_CALLS": str(calls),
                              "APP_INFLIGHT_FILE": str(in_flight)})

    recorded, replayed = _record_and_replay(suite, CONVERSATIONS * 3 * calls)

    expected = [(f"remembers-{n}", Status.PASS, 3, [calls] * 3) for n in range(CONVERSATIONS)]
    assert _turns(recorded) == expected, [e.error for e in recorded.suites[0].evals]
    assert _turns(replayed) == expected, [e.error for e in replayed.suites[0].evals]
    assert _guessed(recorded) == _guessed(replayed) == 0
    assert int(in_flight.read_text()) > 1  # the app answered several turns at once
    assert [e.usage for e in replayed.suites[0].evals] == \
        [e.usage for e in recorded.suites[0].evals]
    assert FALLBACK not in caplog.text


def test_an_app_that_forwards_the_turn_header_is_attributed_by_it(tmp_path: Path) -> None:
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, {"APP_CALLS": "2", "APP_FORWARD_HEADER": "1", "APP_REWRITE": "1",
                              "APP_INFLIGHT_FILE": str(in_flight)},
                   "    forwards_header: true\n", conversations=6)

    recorded, replayed = _record_and_replay(suite, 6 * 3 * 2)

    # The rewritten messages carry no user's words; the header names the turn.
    assert [calls for *_, calls in _turns(recorded)] == [[2, 2, 2]] * 6
    assert [calls for *_, calls in _turns(replayed)] == [[2, 2, 2]] * 6
    assert int(in_flight.read_text()) > 1


def test_an_app_that_rewrites_the_messages_goes_one_turn_at_a_time_and_says_so_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    in_flight = tmp_path / "in_flight"
    suite = _suite(tmp_path, {"APP_CALLS": "2", "APP_REWRITE": "1",
                              "APP_INFLIGHT_FILE": str(in_flight)}, conversations=6)

    with caplog.at_level(logging.WARNING):
        recorded, replayed = _record_and_replay(suite, 6 * 3 * 2)

    # The first turn goes alone (the probe): its calls show the rewriting, and every
    # turn after it goes alone too, each call counted exactly.
    assert int(in_flight.read_text()) == 1
    assert [calls for *_, calls in _turns(recorded)] == [[2, 2, 2]] * 6
    assert [calls for *_, calls in _turns(replayed)] == [[2, 2, 2]] * 6
    assert _guessed(recorded) == 0
    assert caplog.text.count(FALLBACK) == 2  # once in the record run, once in the replay
    assert "include the user's message in the model call" in caplog.text
    assert "forwards_header: true" in caplog.text


def _numbered() -> object:
    """The scripted model: each answer its own number, so that a call replayed under
    another sample's key would answer another sample's words."""
    numbers = itertools.count(1)

    def reply(body: Json) -> str:
        return f"Noted, answer {next(numbers)}."

    return reply


def _samples(result: EvalResult) -> list[list[str]]:
    return [[turn.response for turn in sample.turns] for sample in result.samples]


def test_repeats_and_evals_that_say_the_same_stay_exact(tmp_path: Path) -> None:
    """Conversations whose calls look alike (two evals with the same messages, each
    repeated) go one at a time among themselves; each call is its own sample's."""
    evals = "".join(f"""\
  - name: same-{n}
    prompt: Hello there.
    checks:
      - match: "*never*"
      - prompt: And again ({n}).
        checks:
          - match: "*Noted*"
""" for n in range(2))
    suite = write_suite(tmp_path, http_target({"APP_CALLS": "2"}).replace(
        "metadata:\n", "metadata:\n  repeat: 3\n") + "evals:\n" + evals)
    with ScriptedServer(default_reply=_numbered()) as server:  # type: ignore[arg-type]
        recorded = run_paths([suite], server, "record", env=upstream_env(server.base_url),
                             concurrency=8)
        base_url = server.base_url
    replayed = run_paths([suite], None, "replay", base_url=base_url, env=upstream_env(base_url),
                         concurrency=8)

    answers = [_samples(e) for e in recorded.suites[0].evals]
    assert all(len({text for sample in e for text in sample}) == 3 * 2 for e in answers)
    assert [_samples(e) for e in replayed.suites[0].evals] == answers
    for result in [*recorded.suites[0].evals, *replayed.suites[0].evals]:
        assert [[t.app_model_calls for t in s.turns] for s in result.samples] == [[2, 2]] * 3, \
            result.error


def test_forwards_header_needs_an_http_target(tmp_path: Path) -> None:
    from turncheck.formats.target import Target

    try:
        Target.model_validate({"python": "bot:answer", "forwards_header": True})
    except ValueError as exc:
        assert "forwards_header needs an http target" in str(exc)
    else:
        raise AssertionError("forwards_header on a python target was accepted")
