"""Record examples/weather/ against a scripted tool-calling server (no model, no network).

    python tools/record_tool_example.py

The shipped local model (Gemma 3 270M, tools/serve_local_model.py) cannot call tools,
so the weather example is recorded against a scripted OpenAI-compatible server on
127.0.0.1:8766 (tests/support/scripted_server.py) that answers like a small weather assistant:
it calls get_weather for the city it is asked about, looks at today's weather when
asked about tomorrow (so the example's tool check fails and its follow-up fires), then
calls get_forecast once told to, and answers from the tool results it is sent. The
requests and the scripted answers are real HTTP, recorded by `turncheck record` like
any other example.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.scripted_server import Json, ScriptedServer, ToolCalls  # noqa: E402

PORT = 8766
SUITE = "examples/weather/"


def _person_text(body: Json) -> str:
    users = [m["content"] for m in body["messages"]
             if m.get("role") == "user" and isinstance(m.get("content"), str)]
    return users[-1] if users else ""


def _latest_result(body: Json) -> Json | None:
    last = body["messages"][-1]
    if last.get("role") != "tool":
        return None
    result: Json = json.loads(last["content"])
    return result


def weather_assistant(body: Json) -> str | ToolCalls:
    """One answer of the scripted assistant."""
    asked = _person_text(body)
    result = _latest_result(body)
    if result is not None:
        return _answer_from(result)
    if "Paris" in asked:
        return ToolCalls.one("get_weather", city="Paris")
    if "tomorrow" in asked and "Lyon" in asked:
        return ToolCalls.one("get_weather", city="Lyon")  # today's weather: the wrong tool
    if "forecast" in asked:
        return ToolCalls.one("get_forecast", city="Lyon", day="tomorrow")
    return "Hi! I am a weather assistant: ask me about the weather in any city."


def _answer_from(result: Json) -> str:
    if "chance_of_rain" in result:
        return (f"Tomorrow in {result['city']}: {result['sky']}, "
                f"{round(100 * result['chance_of_rain'])}% chance of rain. Take an umbrella.")
    return f"It is {result['sky']} in {result['city']}, {result['celsius']} °C."


def main() -> int:
    with ScriptedServer(default_reply=weather_assistant, port=PORT):
        done = subprocess.run([sys.executable, "-m", "turncheck", "record", SUITE], cwd=ROOT,
                              check=False)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
