"""Judges and graders ask for schema-constrained answers, and fall back when refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.engine_helpers import only_eval, run_paths, suite_yaml, write_suite
from tests.support.protocol_helpers import is_judge, run_protocol_files, script, write_protocol
from tests.support.provider_helpers import run
from tests.support.scripted_server import Json, ScriptedServer
from turncheck.engine.judge import GRADE_ANSWER, JUDGE_PROMPT_VERSION, VERDICT_ANSWER
from turncheck.engine.scorers.judge_scale import rating_answer
from turncheck.providers.base import AnswerSchema, ChatMessage, ChatRequest, ProviderError
from turncheck.providers.cassette_file import cassette_path_for
from turncheck.providers.factory import make_provider
from turncheck.providers.http import RetryPolicy
from turncheck.report.results import Status

FAST = RetryPolicy(max_attempts=2, backoff_base=0.001, backoff_cap=0.005, timeout=5.0)
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test"}
VERDICT = '{"pass": true, "reason": "It is polite."}'


def format_type(body: Json) -> str | None:
    response_format = body.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


def form(body: Json) -> str:
    """Which request form a chat body is: json_schema, json_object+schema, json_object, ..."""
    response_format = body.get("response_format") or {}
    if "schema" in response_format:
        return "json_object+schema"
    return str(format_type(body) or ("tool" if "tool_choice" in body else "plain"))


def judged_request(schema: AnswerSchema = VERDICT_ANSWER) -> ChatRequest:
    return ChatRequest(
        model="m",
        messages=[ChatMessage("user", "Is this polite?")],
        json_object=True,
        answer_schema=schema,
    )


def chat(provider_name: str, server: ScriptedServer, request: ChatRequest) -> str:
    provider = make_provider(
        provider_name, env=KEYS, policy=FAST, base_url=server.base_url
    )

    async def scenario() -> str:
        try:
            return (await provider.chat(request)).text
        finally:
            await provider.aclose()

    return run(scenario)


def reject(server: ScriptedServer, *forms: str, status_fault: str = "bad_request") -> None:
    server.add_rule(fault=status_fault, when=lambda body: form(body) in forms)  # type: ignore[arg-type]


# -- OpenAI-compatible -------------------------------------------------------------------------


def test_openai_request_carries_the_json_schema(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule(VERDICT)
    assert chat("openai", scripted_server, judged_request()) == VERDICT
    (sent,) = scripted_server.requests
    response_format = sent.json["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "turncheck_verdict"
    assert response_format["json_schema"]["strict"] is True
    strict_schema = response_format["json_schema"]["schema"]
    assert strict_schema["properties"]["pass"] == {"type": "boolean"}
    # OpenAI's strict mode refuses length keywords: only the grammar form keeps them.
    assert strict_schema["properties"]["reason"] == {"type": "string"}
    assert VERDICT_ANSWER.schema["properties"]["reason"]["maxLength"] == 160
    assert VERDICT_ANSWER.schema["required"] == ["pass", "reason"]
    assert VERDICT_ANSWER.schema["additionalProperties"] is False


def test_openai_falls_back_to_llama_schema_then_to_prompt_and_parse(
    scripted_server: ScriptedServer,
) -> None:
    reject(scripted_server, "json_schema", "json_object+schema")
    scripted_server.add_rule(VERDICT)
    assert chat("openai", scripted_server, judged_request()) == VERDICT
    assert [form(r.json) for r in scripted_server.requests] == [
        "json_schema", "json_object+schema", "json_object",
    ]
    llama_form = scripted_server.requests[1].json["response_format"]
    assert llama_form == {"type": "json_object", "schema": VERDICT_ANSWER.schema}
    # The conversation is the same in every form.
    assert len({json.dumps(r.json["messages"]) for r in scripted_server.requests}) == 1


def test_openai_stops_at_the_first_form_the_server_accepts(
    scripted_server: ScriptedServer,
) -> None:
    reject(scripted_server, "json_schema")
    scripted_server.add_rule(VERDICT)
    chat("openai", scripted_server, judged_request())
    assert [form(r.json) for r in scripted_server.requests] == [
        "json_schema", "json_object+schema",
    ]


def test_llama_cpp_pythons_500_for_the_response_format_falls_back(
    scripted_server: ScriptedServer,
) -> None:
    reject(scripted_server, "json_schema", status_fault="llama_validation")
    scripted_server.add_rule(VERDICT)
    assert chat("openai", scripted_server, judged_request()) == VERDICT
    forms = [form(r.json) for r in scripted_server.requests]
    assert forms[-1] == "json_object+schema" and set(forms[:-1]) == {"json_schema"}


def test_a_failure_that_is_not_a_rejection_does_not_fall_back(
    scripted_server: ScriptedServer,
) -> None:
    reject(scripted_server, "json_schema", status_fault="server_error")
    with pytest.raises(ProviderError, match="HTTP 500"):
        chat("openai", scripted_server, judged_request())
    assert {form(r.json) for r in scripted_server.requests} == {"json_schema"}


def test_when_every_form_is_rejected_the_last_error_is_reported(
    scripted_server: ScriptedServer,
) -> None:
    reject(scripted_server, "json_schema", "json_object+schema", "json_object")
    with pytest.raises(ProviderError, match="HTTP 400") as caught:
        chat("openai", scripted_server, judged_request())
    assert caught.value.status_code == 400
    assert len(scripted_server.requests) == 3


def test_a_plain_chat_has_no_response_format(scripted_server: ScriptedServer) -> None:
    chat("openai", scripted_server, ChatRequest(model="m", messages=[ChatMessage("user", "hi")]))
    (sent,) = scripted_server.requests
    assert "response_format" not in sent.json


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_forces_a_tool_call_with_the_schema(scripted_server: ScriptedServer) -> None:
    scripted_server.add_rule('{"score": 2, "reason": "Mostly polite."}')
    text = chat("anthropic", scripted_server, judged_request(GRADE_ANSWER))
    assert json.loads(text) == {"score": 2, "reason": "Mostly polite."}
    (sent,) = scripted_server.requests
    assert sent.json["tools"] == [{
        "name": "turncheck_grade",
        "description": "Give your answer by calling this tool.",
        "input_schema": GRADE_ANSWER.schema,
    }]
    assert sent.json["tool_choice"] == {"type": "tool", "name": "turncheck_grade"}


def test_anthropic_falls_back_to_a_plain_request(scripted_server: ScriptedServer) -> None:
    reject(scripted_server, "tool")
    scripted_server.add_rule(VERDICT)
    assert chat("anthropic", scripted_server, judged_request()) == VERDICT
    assert [form(r.json) for r in scripted_server.requests] == ["tool", "plain"]
    assert "tools" not in scripted_server.requests[1].json


# -- the engine asks for the right schema --------------------------------------------------------

JUDGED = suite_yaml(
    """  - name: judged
    prompt: Say hi.
    checks:
      - llm_judge: {criteria: The reply is polite.}
"""
)


def judge_bodies(server: ScriptedServer) -> list[Json]:
    return [
        r.json for r in server.requests
        if JUDGE_PROMPT_VERSION in str(r.json.get("messages", [{}])[0].get("content"))
    ]


def test_llm_judge_asks_for_the_verdict_schema(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule(VERDICT, contains="<criteria>")
    result = only_eval(run_paths([write_suite(tmp_path, JUDGED)], scripted_server))
    assert result.status is Status.PASS, result.error
    [body] = judge_bodies(scripted_server)
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["pass", "reason"]
    assert JUDGE_PROMPT_VERSION == "turncheck-judge/2"


def test_judge_verdict_survives_a_server_without_structured_output_and_replays(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    reject(scripted_server, "json_schema", "json_object+schema")
    scripted_server.add_rule(VERDICT, contains="<criteria>")
    path = write_suite(tmp_path, JUDGED)
    recorded = only_eval(run_paths([path], scripted_server, mode="record"))
    assert recorded.status is Status.PASS, recorded.error
    assert [form(b) for b in judge_bodies(scripted_server)] == [
        "json_schema", "json_object+schema", "json_object",
    ]
    # Only the accepted form is in the cassette; replay falls back to it offline.
    cassette = cassette_path_for(path).read_text(encoding="utf-8")
    assert "json_schema" not in cassette
    before = len(scripted_server.requests)
    replayed = only_eval(run_paths([path], scripted_server, mode="replay"))
    assert len(scripted_server.requests) == before
    assert replayed.status is Status.PASS, replayed.error
    assert replayed.turns[0].checks == recorded.turns[0].checks
    assert "It is polite." in replayed.turns[0].checks[0].detail


def test_judge_scale_asks_for_the_rating_schema(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    script(scripted_server)
    run_protocol_files([write_protocol(tmp_path)], scripted_server)
    bodies = [r.json for r in scripted_server.requests if is_judge(r.json)]
    assert len(bodies) == 3
    for body in bodies:
        assert body["response_format"]["json_schema"]["name"] == "turncheck_rating"
        schema = body["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["score"] == rating_answer().schema["properties"]["score"]
    assert rating_answer().schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
