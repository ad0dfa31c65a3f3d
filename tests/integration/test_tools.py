"""Tool calls with scripted results and tool checks (issue 24), against a local server
that really answers with tool calls (tests/support/tool_agent.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.golden.test_comment_rendering import (
    assert_inert,
    comment_for,
    eval_result,
    report,
    suite,
    turn,
)
from tests.support.engine_helpers import run_paths, write_suite
from tests.support.scripted_server import ScriptedServer, ToolCalls
from tests.support.tool_agent import WEATHER_SUITE, weather_agent
from turncheck.engine.budget import DEFAULT_MAX_OUTPUT_TOKENS
from turncheck.engine.estimate import estimate
from turncheck.engine.judge import grader_messages, transcript
from turncheck.engine.pricing import Pricer
from turncheck.formats.sample_loader import parse_samples
from turncheck.formats.suite_loader import load_suite
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.render.console import eval_lines
from turncheck.report.results import Status, ToolCallResult
from turncheck.report.run import EvalResult, Report


def evals_by_name(report: Report) -> dict[str, EvalResult]:
    [suite] = report.suites
    return {result.name: result for result in suite.evals}


@pytest.fixture
def agent() -> Iterator[ScriptedServer]:
    server = ScriptedServer(default_reply=weather_agent).start()
    yield server
    server.stop()


def test_the_weather_suite_passes_fails_and_follows_up_on_tool_checks(
    tmp_path: Path, agent: ScriptedServer
) -> None:
    report = run_paths([write_suite(tmp_path, WEATHER_SUITE)], agent)
    results = evals_by_name(report)

    paris = results["paris"]
    assert (paris.status, paris.passed_on_turn) == (Status.PASS, 1)
    [turn] = paris.turns
    assert [(c.round, c.name, c.arguments) for c in turn.tool_calls] == [
        (1, "get_weather", {"city": "Paris"})]
    assert json.loads(turn.tool_calls[0].result or "") == {
        "city": "Paris", "forecast": "sunny", "celsius": 21}
    assert "sunny" in turn.response and turn.rounds == 2
    # Both rounds are counted: the tool-calling answer and the final one.
    assert turn.usage.input_tokens > 0 and turn.usage == paris.usage

    capital = results["capital"]
    assert (capital.status, capital.passed_on_turn) == (Status.PASS, 2)
    first, second = capital.turns
    assert [c.arguments for c in first.tool_calls] == [{"city": "Lyon"}]
    assert not first.checks[0].passed and "get_weather(city=\"Lyon\")" in first.checks[0].detail
    assert [c.arguments for c in second.tool_calls] == [{"city": "Paris"}]

    greeting = results["greeting"]
    assert (greeting.status, greeting.passed_on_turn) == (Status.PASS, 1)
    assert greeting.turns[0].tool_calls == [] and greeting.turns[0].rounds == 1

    parallel = results["time then weather"]
    assert parallel.status is Status.PASS
    assert [(c.round, c.name) for c in parallel.turns[0].tool_calls] == [
        (1, "get_time"), (1, "get_weather")]


def test_the_second_turn_sends_the_first_turns_calls_and_results(
    tmp_path: Path, agent: ScriptedServer
) -> None:
    run_paths([write_suite(tmp_path, WEATHER_SUITE)], agent)
    follow_up = next(r.json for r in agent.requests
                     if "I meant Paris" in json.dumps(r.json["messages"]))
    roles = [m["role"] for m in follow_up["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    call = follow_up["messages"][2]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Lyon"}'}
    assert follow_up["messages"][3] == {"role": "tool", "tool_call_id": call["id"],
                                        "content": "Lyon: rain, 14 C"}
    assert [t["function"]["name"] for t in follow_up["tools"]] == ["get_weather", "get_time"]


def test_record_then_offline_replay_gives_the_same_report(tmp_path: Path) -> None:
    server = ScriptedServer(default_reply=weather_agent).start()
    path = write_suite(tmp_path, WEATHER_SUITE)
    recorded = run_paths([path], server, mode="record")
    server.stop()
    replayed = run_paths([path], server, mode="replay")
    assert replayed.live_tokens == 0 < recorded.live_tokens
    assert [r.model_dump() for r in replayed.suites] == [r.model_dump() for r in recorded.suites]
    cassette = cassette_path_for(path).read_text(encoding="utf-8")
    assert cassette.count("get_weather") > 4  # each round is its own interaction


@pytest.mark.parametrize(("prompt", "error"), [
    ("Weather in ROME?", 'turn 1: no scripted result for get_weather({"city": "Rome"})'),
    ("LOOP forever", "turn 1: the model still called tools after max_tool_rounds (3) rounds"),
    ("BROKEN call", "turn 1: the model called get_weather with malformed arguments (not JSON): "
     '{"city": "Par'),
])
def test_an_unanswerable_call_is_an_error_of_that_eval_only(
    tmp_path: Path, agent: ScriptedServer, prompt: str, error: str
) -> None:
    bad = f"  - name: bad\n    prompt: {prompt}\n    checks: [{{tool_call: get_weather}}]\n"
    report = run_paths([write_suite(tmp_path, WEATHER_SUITE + bad)], agent)
    results = evals_by_name(report)
    assert results["bad"].status is Status.ERROR
    assert (results["bad"].error or "").startswith(error)
    assert results["bad"].turns[0].tool_calls  # the calls made so far are in the report
    others = [r.status for name, r in results.items() if name != "bad"]
    assert others == [Status.PASS] * 4


def test_eval_tools_override_the_metadata_and_times_counts_calls(
    tmp_path: Path, agent: ScriptedServer
) -> None:
    own = (
        "  - name: own tools\n"
        "    prompt: What is the weather in Paris?\n"
        "    tools:\n"
        "      - {type: function, function: {name: get_weather}}\n"
        "    tool_results:\n"
        "      get_weather: [{result: cloudy}]\n"
        "    checks:\n"
        "      - tool_call: get_weather\n"
        "        times: 2\n"
        "      - match: '*cloudy*'\n"
    )
    report = run_paths([write_suite(tmp_path, WEATHER_SUITE + own)], agent)
    result = evals_by_name(report)["own tools"]
    assert result.status is Status.FAIL  # called once, not twice
    assert [c.passed for c in result.turns[0].checks] == [False, True]
    sent = next(r.json for r in agent.requests if "cloudy" in json.dumps(r.json))
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]


PROTOCOL_WITH_TOOLS = """\
metadata:
  name: weather protocol
  model: gpt-4o-mini
  tools:
    - {type: function, function: {name: get_weather}}
  tool_results:
    get_weather: [{when: {city: Paris}, result: sunny}]
cases:
  - id: paris
    vars: {city: Paris}
  - id: rome
    vars: {city: ROME}
turns:
  - id: ask
    prompt: "What is the weather in {{ case.vars.city }}?"
"""


def test_protocol_suites_answer_tool_calls_too(tmp_path: Path, agent: ScriptedServer) -> None:
    report = run_paths([write_suite(tmp_path, PROTOCOL_WITH_TOOLS)], agent)
    [protocol] = report.protocols
    cases = {case.id: case for case in protocol.cases}
    [turn] = cases["paris"].turns
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "sunny")]
    assert turn.response == "Weather report: sunny" and turn.rounds == 2
    assert cases["rome"].status is Status.ERROR
    assert 'no scripted result for get_weather({"city": "Rome"})' in (cases["rome"].error or "")


def test_the_same_suite_runs_on_anthropics_messages_api(
    tmp_path: Path, agent: ScriptedServer
) -> None:
    host = agent.base_url.removesuffix("/v1")
    report = run_paths([write_suite(tmp_path, WEATHER_SUITE)], None, provider="anthropic",
                       env={"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": host})
    results = evals_by_name(report)
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(results, Status.PASS)
    assert results["capital"].passed_on_turn == 2
    assert [(c.name, c.arguments) for c in results["paris"].turns[0].tool_calls] == [
        ("get_weather", {"city": "Paris"})]
    assert "sunny" in results["paris"].turns[0].response
    requests = [r for r in agent.requests if r.path == "/v1/messages"]
    assert len(requests) == len(agent.requests)
    follow_up = next(r.json for r in requests if "I meant Paris" in json.dumps(r.json))
    assert follow_up["system"].startswith("You are a weather assistant")
    assert follow_up["tools"][0] == {
        "name": "get_weather", "description": "Current weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}
    first_answer, results_message = follow_up["messages"][1:3]
    assert first_answer == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_0_0", "name": "get_weather",
         "input": {"city": "Lyon"}}]}
    assert results_message == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_0_0", "content": "Lyon: rain, 14 C"}]}


def test_the_worst_case_estimate_takes_every_tool_round(tmp_path: Path) -> None:
    plain = WEATHER_SUITE.split("  max_tool_rounds: 3\n")
    rounds_3 = write_suite(tmp_path, WEATHER_SUITE, "three.eval.yaml")
    rounds_1 = write_suite(tmp_path, "  max_tool_rounds: 1\n".join(plain), "one.eval.yaml")
    pricer = Pricer.at("2026-11-01T00:00:00Z")
    three, one = (estimate([load_suite(path)], pricer) for path in (rounds_3, rounds_1))
    # 5 turns on the costliest paths (capital has a follow-up), each of 4 (or 2) rounds
    # of at most DEFAULT_MAX_OUTPUT_TOKENS output tokens.
    assert three.worst.usage.output_tokens == 5 * 4 * DEFAULT_MAX_OUTPUT_TOKENS
    assert one.worst.usage.output_tokens == 5 * 2 * DEFAULT_MAX_OUTPUT_TOKENS
    assert three.worst.usage.input_tokens > 2 * one.worst.usage.input_tokens


CALL = """function = { name = "get_weather", arguments = '{"city": "Paris"}' }"""
AGENT_SAMPLES = f"""\
[[samples]]
id = "looked-up"
expected = {{ score = 3 }}
messages = [
  {{ role = "user", content = "Weather in Paris?" }},
  {{ role = "assistant", tool_calls = [{{ id = "call_1", type = "function", {CALL} }}] }},
  {{ role = "tool", tool_call_id = "call_1", content = "sunny, 21 C" }},
  {{ role = "assistant", content = "It is sunny in Paris." }},
]

[[samples]]
id = "silent"
expected = {{ score = -3 }}
messages = [{{ role = "assistant" }}]
"""


def test_sample_files_take_tool_calls_and_graders_see_them() -> None:
    loaded = parse_samples(AGENT_SAMPLES, "agent.samples.toml")
    [problem] = loaded.diagnostics
    assert (problem.code, problem.message) == (
        "invalid-message", 'sample "silent": message 1 has no "content"')
    [sample] = loaded.samples
    assert [m.role for m in sample.messages] == ["user", "assistant", "tool", "assistant"]
    shown = transcript(sample.messages)
    assert '[assistant]\n(calls get_weather with {"city": "Paris"})' in shown
    assert "[tool]\nsunny, 21 C" in shown
    criteria = grader_messages(sample.messages, "Did it look the weather up?")[1].content
    assert "(calls get_weather" in criteria


def test_the_console_shows_each_call_under_its_turn(tmp_path: Path, agent: ScriptedServer) -> None:
    report = run_paths([write_suite(tmp_path, WEATHER_SUITE)], agent)
    capital = evals_by_name(report)["capital"]
    lines = list(eval_lines(2, capital))
    assert lines[:4] == [
        "Eval 2: capital",
        "  Turn 1:",
        "    Prompt: What is the weather in the French capital?",
        '    Tool call round 1: get_weather(city="Lyon") → Lyon: rain, 14 C',
    ]
    assert '    Tool call round 1: get_weather(city="Paris") → ' \
        '{"city": "Paris", "forecast": "sunny", "celsius": 21}' in lines


def test_the_comment_transcript_shows_the_calls_inert(tmp_path: Path) -> None:
    hostile_city = "Paris</details><!-- @org/team #1 | x |"
    calls = [ToolCallResult(round=1, name="get_weather", arguments={"city": hostile_city},
                            result="sunny")]
    good = turn(1, "Weather in Paris?", "It is sunny.", True)
    bad = turn(1, "Weather in Paris?", "It is sunny.", False).model_copy(
        update={"tool_calls": calls})
    base = report([suite("w.eval.yaml", "weather", [eval_result("paris", [good])])], "b")
    head = report([suite("w.eval.yaml", "weather", [eval_result("paris", [bad])])], "h")
    body, _comparison, _context = comment_for(base, head)
    assert_inert(body)
    assert "🔧 round 1: get\\_weather\\(city=" in body  # Markdown-escaped, in the head cell
    assert "</details><!-- @org" not in body


@pytest.mark.parametrize(("reply", "error"), [
    (ToolCalls(tuple(("get_time", {}) for _ in range(65))),
     "the model made 65 tool calls in one answer; at most 64 are answered"),
    (ToolCalls((("get_time", "[" * 100_000 + "]" * 100_000),)),
     "the model called get_time with arguments nested more than 64 levels deep"),
    (ToolCalls((("get_time", "[1, 2]"),)),
     "the model called get_time with arguments that are not a JSON object"),
])
def test_hostile_tool_calls_are_errors_of_their_eval(
    tmp_path: Path, scripted_server: ScriptedServer, reply: ToolCalls, error: str
) -> None:
    scripted_server.add_rule(reply, contains="HOSTILE")
    scripted_server.add_rule(weather_agent)
    bad = "  - name: bad\n    prompt: HOSTILE\n    checks: [{no_tool_call: '*'}]\n"
    results = evals_by_name(run_paths([write_suite(tmp_path, WEATHER_SUITE + bad)],
                                      scripted_server))
    assert results["bad"].status is Status.ERROR
    assert error in (results["bad"].error or "")
    assert [r.status for n, r in results.items() if n != "bad"] == [Status.PASS] * 4


def test_a_tools_file_outside_the_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    suite_dir = tmp_path / "evals"
    suite_dir.mkdir()
    (tmp_path / "outside.json").write_text("[]", encoding="utf-8")
    text = WEATHER_SUITE.replace("  tools:\n", "  tools: {file: ../../outside.json}\n  x_old:\n")
    loaded = load_suite(write_suite(suite_dir, text), root=tmp_path)
    assert loaded.suite is None
    assert any(d.code == "invalid-reference" and "outside the repository" in d.message
               for d in loaded.diagnostics)
