"""A scripted weather agent for tool-use tests: a local server that really calls tools.

The `weather_agent` reply behaves like a small tool-using assistant: it calls
`get_weather` for the city the user names (the wrong city on purpose for "the French
capital"), then answers with the tool's result once it has one. Prompts holding
"ROME", "LOOP" or "BROKEN" make it call an unscripted city, call tools forever, or send
malformed arguments.
"""

from __future__ import annotations

from tests.support.scripted_server import Json, ToolCalls, tool_results

WEATHER_SUITE = """\
metadata:
  name: weather agent
  model: gpt-4o-mini
  system_prompt: You are a weather assistant. Use the get_weather tool.
  max_tool_rounds: 3
  tools:
    - type: function
      function:
        name: get_weather
        description: Current weather in a city.
        parameters:
          type: object
          properties: {city: {type: string}}
          required: [city]
    - type: function
      function:
        name: get_time
        description: Local time in a city.
        parameters: {type: object, properties: {city: {type: string}}}
  tool_results:
    get_weather:
      - when: {city: Paris}
        result: {city: Paris, forecast: sunny, celsius: 21}
      - when: {city: "L*"}
        result: "Lyon: rain, 14 C"
    get_time:
      - result: "12:00"
evals:
  - name: paris
    prompt: What is the weather in Paris?
    checks:
      - tool_call: get_weather
        args: {city: Paris}
        times: 1
      - match: "*sunny*"
  - name: capital
    prompt: What is the weather in the French capital?
    checks:
      - tool_call: get_weather
        args: {city: Paris}
        prompt: I meant Paris, the capital of France.
        checks:
          - tool_call: get_weather
            args: {city: "pa*"}
          - match: "*sunny*"
  - name: greeting
    prompt: Hello!
    checks:
      - no_tool_call: "*"
      - match: "Hi*"
  - name: time then weather
    prompt: What time is it in Paris, and the weather?
    checks:
      - tool_order: [get_time, get_weather]
      - or:
          - no_tool_call: get_time
          - match: "*12:00*"
"""


def weather_agent(body: Json) -> str | ToolCalls:
    """One answer of the scripted agent to a chat (or Messages) request body."""
    prompt = person_text(body)
    if "LOOP" in prompt:
        return ToolCalls.one("get_weather", city="Paris")
    latest = latest_results(body)
    if latest:
        return f"Weather report: {' / '.join(latest)}"
    if "Hello" in prompt:
        return "Hi there! Ask me about the weather."
    if "ROME" in prompt:
        return ToolCalls.one("get_weather", city="Rome")
    if "BROKEN" in prompt:
        return ToolCalls((("get_weather", '{"city": "Par'),))
    if "time" in prompt:  # two parallel calls in one answer
        return ToolCalls((("get_time", {"city": "Paris"}), ("get_weather", {"city": "Paris"})))
    if "French capital" in prompt and user_turns_by_people(body) == 1:
        return ToolCalls.one("get_weather", city="Lyon")
    return ToolCalls.one("get_weather", city="Paris")


def latest_results(body: Json) -> list[str]:
    """The tool results the request ends with (OpenAI `tool` messages after the last
    assistant message, or the Anthropic `tool_result` blocks of the last message)."""
    messages = body.get("messages") or []
    trailing: list[Json] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        trailing.insert(0, message)
    if not trailing and messages and isinstance(messages[-1].get("content"), list):
        trailing = [messages[-1]]
    return tool_results({"messages": trailing})


def person_text(body: Json) -> str:
    """The latest user message written by a person (not tool results)."""
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return content
    return ""


def user_turns_by_people(body: Json) -> int:
    return sum(1 for m in body.get("messages", [])
               if m.get("role") == "user" and isinstance(m.get("content"), str))
