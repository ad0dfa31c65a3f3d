"""What a report keeps of one of the app's model calls (targets/app_calls.py), read from
the request and the answer's bytes: the Responses API's tool calls and the results sent
back, and bounds on what a hostile app or model can make it keep."""

from __future__ import annotations

import json

from turncheck.report.results import MAX_REPORT_ANSWER_CHARS, MAX_REPORT_PROMPT_CHARS
from turncheck.targets.app_calls import MAX_LISTED, MAX_RESULT_CHARS, described_call

RESPONSES_REQUEST = {
    "model": "gpt-4o-mini", "instructions": "You are the refund desk.",
    "tools": [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}},
              {"type": "web_search"}],
    "input": [{"role": "user", "content": "Refund A1."},
              {"type": "function_call", "call_id": "c1", "name": "lookup_order",
               "arguments": '{"order_id": "A1"}'},
              {"type": "function_call_output", "call_id": "c1", "output": '{"total": 42}'}],
}


def _responses_answer() -> dict[str, object]:
    return {"id": "resp_1", "object": "response", "status": "completed",
            "model": "gpt-4o-mini",
            "output": [{"type": "function_call", "call_id": "c2", "name": "issue_refund",
                        "arguments": '{"order_id": "A1", "amount": 42}'}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}


def _event(name: str, data: dict[str, object]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def test_a_responses_call_keeps_its_instructions_tools_calls_and_results() -> None:
    body = json.dumps(_responses_answer()).encode()
    call = described_call("openai", "/v1/responses", RESPONSES_REQUEST, "application/json",
                          body)
    assert (call.api, call.model, call.system) == ("responses", "gpt-4o-mini",
                                                   "You are the refund desk.")
    assert [tool.name for tool in call.tools] == ["lookup_order", "web_search"]
    assert [(c.name, c.arguments) for c in call.tool_calls] == [
        ("issue_refund", {"order_id": "A1", "amount": 42})]
    assert [(r.name, r.content) for r in call.tool_results] == [("lookup_order",
                                                                 '{"total": 42}')]


def test_a_streamed_responses_call_gives_the_same_record() -> None:
    request = {**RESPONSES_REQUEST, "stream": True}
    answer = _responses_answer()
    streamed = (_event("response.created", {"response": {**answer, "output": []}})
                + _event("response.function_call_arguments.delta",
                         {"delta": '{"order_id"', "output_index": 0})
                + _event("response.completed", {"response": answer}))
    call = described_call("openai", "/v1/responses", request, "text/event-stream", streamed)
    plain = described_call("openai", "/v1/responses", RESPONSES_REQUEST, "application/json",
                           json.dumps(_responses_answer()).encode())
    assert call.streamed and call.tool_calls == plain.tool_calls
    assert call.tool_results == plain.tool_results


def test_what_a_call_keeps_is_bounded() -> None:
    many_tools = [{"type": "function", "function": {"name": f"t{n}"}} for n in range(500)]
    request = {"model": "m", "tools": many_tools,
               "messages": [{"role": "system", "content": "s" * (MAX_REPORT_PROMPT_CHARS * 3)},
                            {"role": "assistant", "content": None, "tool_calls": [
                                {"id": "c", "type": "function",
                                 "function": {"name": "t1", "arguments": "{}"}}]},
                            {"role": "tool", "tool_call_id": "c",
                             "content": "r" * (MAX_REPORT_ANSWER_CHARS * 10)}]}
    answer = {"choices": [{"message": {"tool_calls": [
        {"id": f"x{n}", "type": "function",
         "function": {"name": "t1", "arguments": json.dumps({"a": "b" * 20_000})}}
        for n in range(200)]}}]}
    call = described_call("openai", "/v1/chat/completions", request, "application/json",
                          json.dumps(answer).encode())
    assert len(call.tools) == MAX_LISTED and len(call.tool_calls) == MAX_LISTED
    assert call.system is not None and len(call.system) < MAX_REPORT_PROMPT_CHARS + 200
    assert call.system_chars == MAX_REPORT_PROMPT_CHARS * 3
    assert len(call.tool_results[0].content) < MAX_RESULT_CHARS + 200
    assert all(isinstance(c.arguments, str) and len(c.arguments) < MAX_REPORT_ANSWER_CHARS + 200
               for c in call.tool_calls)


def test_hostile_shapes_are_read_as_nothing_rather_than_raising() -> None:
    for request in ({"messages": "x", "tools": {"a": 1}}, {"messages": [1, None, {"role": 5}]},
                    {"system": [{"type": "text", "text": 3}], "tools": [None, {"name": 7}]}):
        for body in (b"not json", b"[]", b'{"choices": "x"}', b'{"content": [1]}'):
            call = described_call("anthropic", "/v1/messages", request, "application/json",
                                  body)
            assert call.tool_calls == [] and call.tools == []
