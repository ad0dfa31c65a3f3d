"""What one of the app's model calls sent and got, read from the request the proxy passed
on and the answer it passed back (docs/targets.md, "What the app sent").

The same bytes are read whether the answer came from the upstream or from the cassette,
so a replay gives the record the recording gave (but latency). Everything kept is
bounded: a system prompt to `MAX_REPORT_PROMPT_CHARS`, each call's arguments to
`MAX_REPORT_ANSWER_CHARS`, each tool result to `MAX_RESULT_CHARS`, and at most
`MAX_LISTED` tools, tool calls and results.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from turncheck.providers.interactions import canonical_json
from turncheck.providers.json_limits import loads_bounded
from turncheck.report.app_calls import AppCall, AppToolCall, AppToolResult, OfferedTool
from turncheck.report.results import MAX_REPORT_ANSWER_CHARS, kept_prompt
from turncheck.targets.usage import ModelCall, answer_payloads

JsonObject = dict[str, Any]
MAX_LISTED = 32
"""Tools offered, tool calls asked for and tool results sent back that one call keeps."""
MAX_RESULT_CHARS = 2_000
"""Characters of each tool result a call keeps: the app's own data, which no check reads
(arguments, which checks read, keep `MAX_REPORT_ANSWER_CHARS`)."""
_APIS = {"/chat/completions": "chat", "/responses": "responses", "/messages": "messages",
         "/embeddings": "embeddings"}


def api_of(path: str) -> str:
    """`chat`, `responses`, `messages`, `embeddings` or `other`, from the call's path."""
    path = path.split("?", 1)[0].rstrip("/")
    return next((api for end, api in _APIS.items() if path.endswith(end)), "other")


def request_json(body: bytes) -> JsonObject:
    try:
        payload = loads_bounded(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def described_call(provider: str, path: str, request: JsonObject, content_type: str,
                   content: bytes, parsed: Any = None, **measured: Any) -> AppCall:
    """The call's record; `measured`: its tokens and latency, when known (its cost is the
    engine's to add)."""
    api = api_of(path)
    system = _system_of(api, request)
    kept, length, _ = kept_prompt(system) if system else (None, None, None)
    answer = answer_payloads(content_type, content, parsed)
    return AppCall(
        provider=provider, api=api,
        model=request.get("model") if isinstance(request.get("model"), str) else None,
        streamed=request.get("stream") is True,
        system_sha256=_sha256(system) if system else None, system=kept, system_chars=length,
        tools=_tools_offered(request.get("tools"))[:MAX_LISTED],
        tool_calls=_tool_calls(api, answer)[:MAX_LISTED],
        tool_results=_tool_results(api, request)[-MAX_LISTED:], **measured)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _text(content: Any) -> str:
    """A message's content as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, dict)
                         and isinstance(part.get("text"), str))
    return ""


def _system_of(api: str, request: JsonObject) -> str:
    """The system prompt (OpenAI's system and developer messages, the Responses API's
    `instructions`, Anthropic's `system`), its parts joined by a blank line."""
    parts: list[str] = []
    if api == "messages":
        parts.append(_text(request.get("system")))
    if api == "responses":
        parts.append(_text(request.get("instructions")))
    messages = request.get("messages") if api == "chat" else request.get("input")
    if isinstance(messages, list):
        parts += [_text(m.get("content")) for m in messages if isinstance(m, dict)
                  and m.get("role") in ("system", "developer")]
    return "\n\n".join(part for part in parts if part)


def _tools_offered(tools: Any) -> list[OfferedTool]:
    if not isinstance(tools, list):
        return []
    offered = []
    for tool in tools[:MAX_LISTED]:
        if not isinstance(tool, dict):
            continue
        function = _object(tool.get("function")) or tool
        name = function.get("name") or tool.get("type")
        if isinstance(name, str):
            offered.append(OfferedTool(name=_cut(name, "the tool name"),
                                       schema_sha256=_sha256(canonical_json(tool))))
    return offered


@dataclass
class _Pending:
    """A tool call whose parts arrive in pieces (a streamed answer)."""

    name: str = ""
    arguments: list[str] = field(default_factory=list)
    id: str | None = None


def _tool_calls(api: str, payloads: list[JsonObject]) -> list[AppToolCall]:
    pending: dict[tuple[int, int], _Pending] = {}
    for payload in payloads:
        for key, name, arguments, call_id in _call_parts(api, payload):
            part = pending.setdefault(key, _Pending())
            part.name += name
            part.arguments.append(arguments)
            part.id = part.id or call_id
    return [AppToolCall(name=_cut(part.name, "the tool name"),
                        arguments=_arguments("".join(part.arguments)), id=part.id)
            for _, part in sorted(pending.items()) if part.name]


Part = tuple[tuple[int, int], str, str, str | None]


def _call_parts(api: str, payload: JsonObject) -> Iterator[Part]:
    """(position, name piece, arguments piece, id) of the tool calls in one answer or
    streamed event."""
    if api == "chat":
        yield from _chat_parts(payload)
    elif api == "messages":
        yield from _messages_parts(payload)
    elif api == "responses":
        yield from _responses_parts(payload)


def _chat_parts(payload: JsonObject) -> Iterator[Part]:
    for choice in _list(payload.get("choices"))[:1]:
        message = choice.get("message") or choice.get("delta")
        if not isinstance(message, dict):
            continue
        for index, call in enumerate(_list(message.get("tool_calls"))):
            function = _object(call.get("function"))
            position = call["index"] if isinstance(call.get("index"), int) else index
            yield ((0, position), _str(function.get("name")), _str(function.get("arguments")),
                   _id(call))


def _messages_parts(payload: JsonObject) -> Iterator[Part]:
    kind = payload.get("type")
    if kind == "message":
        for index, block in enumerate(_list(payload.get("content"))):
            if block.get("type") == "tool_use":
                yield ((0, index), _str(block.get("name")), json.dumps(block.get("input", {})),
                       _id(block))
    elif kind == "content_block_start":
        block = _object(payload.get("content_block"))
        if block.get("type") == "tool_use":
            given = block.get("input")
            start = json.dumps(given) if given else ""
            yield (0, _index(payload)), _str(block.get("name")), start, _id(block)
    elif kind == "content_block_delta":
        delta = payload.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "input_json_delta":
            yield (0, _index(payload)), "", _str(delta.get("partial_json")), None


def _responses_parts(payload: JsonObject) -> Iterator[Part]:
    response = payload.get("response") if payload.get("type") == "response.completed" \
        else payload if payload.get("object") == "response" else None
    if not isinstance(response, dict):
        return
    for index, item in enumerate(_list(response.get("output"))):
        if item.get("type") == "function_call":
            yield ((0, index), _str(item.get("name")), _str(item.get("arguments")),
                   item.get("call_id") if isinstance(item.get("call_id"), str) else None)


def _tool_results(api: str, request: JsonObject) -> list[AppToolResult]:
    """The tool results the request sends back: those after the model's last answer."""
    if api == "chat":
        return _trailing_chat_results(_list(request.get("messages")))
    if api == "messages":
        messages = _list(request.get("messages"))
        last = messages[-1] if messages else {}
        names = _names_by_id(messages)
        return [_result(block.get("content"), _id(block, "tool_use_id"), names)
                for block in _list(last.get("content")) if block.get("type") == "tool_result"]
    if api == "responses":
        items = _list(request.get("input"))
        names = _names_by_id(items)
        trailing = []
        for item in reversed(items):
            if item.get("type") != "function_call_output":
                break
            trailing.append(_result(item.get("output"), _id(item, "call_id"), names))
        return trailing[::-1]
    return []


def _trailing_chat_results(messages: list[JsonObject]) -> list[AppToolResult]:
    names = _names_by_id(messages)
    trailing = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        trailing.append(_result(message.get("content"), _id(message, "tool_call_id"), names))
    return trailing[::-1]


def _names_by_id(items: list[JsonObject]) -> dict[str, str]:
    """Tool names by call id, from the earlier answers a request repeats."""
    names: dict[str, str] = {}
    for item in items:
        for call in _list(item.get("tool_calls")):  # chat
            function = call.get("function")
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                names[call["id"]] = _str(function.get("name"))
        for block in _list(item.get("content")):  # messages
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                names[block["id"]] = _str(block.get("name"))
        if item.get("type") == "function_call" and isinstance(item.get("call_id"), str):
            names[item["call_id"]] = _str(item.get("name"))  # responses
    return names


def _result(content: Any, call_id: str | None, names: dict[str, str]) -> AppToolResult:
    text = content if isinstance(content, str) else _text(content) if isinstance(
        content, list) else json.dumps(content)
    return AppToolResult(content=_cut(text, "the tool result", MAX_RESULT_CHARS),
                         name=names.get(call_id) if call_id else None, id=call_id)


def _arguments(text: str) -> Any:
    if len(text) > MAX_REPORT_ANSWER_CHARS:
        return _cut(text, "the arguments")
    try:
        return loads_bounded(text) if text else {}
    except (ValueError, UnicodeDecodeError):
        return text


def _cut(text: str, what: str, keep: int = MAX_REPORT_ANSWER_CHARS) -> str:
    if len(text) <= keep:
        return text
    return text[:keep] + f"\n... [cut by turncheck: {what} had {len(text):,} characters]"


def _list(value: Any) -> list[JsonObject]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) \
        else []


def _object(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _id(block: JsonObject, key: str = "id") -> str | None:
    value = block.get(key)
    return value if isinstance(value, str) else None


def _index(payload: JsonObject) -> int:
    index = payload.get("index")
    return index if isinstance(index, int) else 0


def with_record(usage: ModelCall, provider: str, path: str, body: bytes, content_type: str,
                content: bytes, parsed: Any, timing: tuple[float | None, float | None],
                turn_guessed: bool = False) -> ModelCall:
    """`usage` with its record: what the call sent and got, its tokens, (answered by the
    upstream now) its first-token and total latency, and whether its turn is a guess."""
    request = request_json(body)
    first, total = timing
    if first is None:  # read whole: its first token reached the app with the rest
        first = total
    if usage.input_tokens is None:
        usage = replace(usage, input_tokens=estimated_tokens(request),
                        output_tokens=estimated_tokens(answer_payloads(content_type, content,
                                                                        parsed), answer=True),
                        estimated=True)
    record = described_call(
        provider, path, request, content_type, content, parsed,
        tokens_estimated=usage.estimated,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens or None,
        first_token_ms=None if first is None else round(first, 1),
        total_ms=None if total is None else round(total, 1), turn_guessed=turn_guessed)
    return replace(usage, record=record)


CHARS_PER_TOKEN = 4
"""The estimate of an answer that reports no usage: about 4 characters a token (English
with the BPE tokenizers of OpenAI and Anthropic), as turncheck estimates elsewhere."""
_ANSWER_KEYS = frozenset({"content", "text", "delta", "arguments", "partial_json"})
_MAX_WALK_DEPTH = 12


def estimated_tokens(value: Any, *, answer: bool = False) -> int:
    """Tokens of the text in a request (every string but the model's name) or in an
    answer's payloads (its text and tool arguments): at least 1."""
    chars = _text_chars(value, answer, 0)
    return max(1, -(-chars // CHARS_PER_TOKEN))


def _text_chars(value: Any, answer: bool, depth: int, key: str = "") -> int:
    if isinstance(value, str):
        counted = key in _ANSWER_KEYS if answer else key not in ("model", "role", "type")
        return len(value) if counted else 0
    if depth >= _MAX_WALK_DEPTH:
        return 0
    if isinstance(value, dict):
        return sum(_text_chars(item, answer, depth + 1, name)
                   for name, item in value.items())
    if isinstance(value, list):
        return sum(_text_chars(item, answer, depth + 1, key) for item in value)
    return 0
