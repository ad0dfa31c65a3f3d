"""Only good answers are recorded (issue 10, item 6).

A 2xx answer without a usable completion is retried like a transient fault, is
never written to the cassette, and a stored unusable answer is re-requested when
re-recording (and refused, with the command to fix it, when replaying).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.engine_helpers import only_eval, run_paths, suite_yaml, write_suite
from tests.support.scripted_server import ScriptedServer
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.cassette_transport import CassetteTransport
from turncheck.report.results import Status

EVALS = "  - {prompt: What is 15 * 7?, checks: [{match: '*105*'}]}\n"


def test_an_answer_without_choices_is_retried_and_never_recorded(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(fault="no_choices", times=1)
    scripted_server.add_rule("The answer is 105.")
    path = write_suite(tmp_path, suite_yaml(EVALS))
    report = run_paths([path], scripted_server, mode="record")
    result = only_eval(report)
    assert result.status is Status.PASS, result.error
    assert len(scripted_server.requests) == 2  # the bad answer, then the retry
    cassette = cassette_path_for(path).read_text(encoding="utf-8")
    assert "cmpl-empty" not in cassette
    stored = CassetteTransport(cassette_path_for(path), "replay")
    assert len(stored) == 1 and stored.load_error is None


def test_a_persistently_unusable_answer_is_an_error_and_not_recorded(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(fault="no_choices")
    path = write_suite(tmp_path, suite_yaml(EVALS))
    result = only_eval(run_paths([path], scripted_server, mode="record"))
    assert result.status is Status.ERROR
    assert "unusable answer" in (result.error or "") and "no choices" in (result.error or "")
    assert not cassette_path_for(path).exists()


def poisoned_cassette(tmp_path: Path, scripted_server: ScriptedServer) -> Path:
    """A cassette whose only recording is an answer without choices (as older versions
    of turncheck recorded them)."""
    scripted_server.add_rule("The answer is 105.")
    path = write_suite(tmp_path, suite_yaml(EVALS))
    run_paths([path], scripted_server, mode="record")
    cassette = cassette_path_for(path)
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    [interaction] = data["interactions"]
    interaction["response"]["body"]["string"] = '{"id": "cmpl-empty", "object": "x"}'
    cassette.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_re_recording_heals_an_unusable_recording(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    path = poisoned_cassette(tmp_path, scripted_server)
    replayed = only_eval(run_paths([path], None, mode="replay",
                                   base_url=scripted_server.base_url))
    assert replayed.status is Status.ERROR
    # The advice repeats the options that shaped the requests, and prunes the bad answer.
    assert "not usable" in (replayed.error or "") and (
        f"re-record it with: turncheck record --provider openai --base-url "
        f"{scripted_server.base_url} {path} --prune") in (replayed.error or "")
    before = len(scripted_server.requests)
    healed = only_eval(run_paths([path], scripted_server, mode="record"))
    assert healed.status is Status.PASS
    assert len(scripted_server.requests) == before + 1  # re-requested, not replayed
    text = cassette_path_for(path).read_text(encoding="utf-8")
    assert "cmpl-empty" not in text
    assert len(CassetteTransport(cassette_path_for(path), "replay")) == 1
    again = run_paths([path], None, mode="replay", base_url=scripted_server.base_url)
    assert only_eval(again).status is Status.PASS
