"""An app for the concurrent-turn tests of python and command targets: each turn waits
0.1 s (`vars.delay`), asks the model once through the recording proxy and answers with
every user message of its conversation and the model's answer, so a reply that went to
the wrong conversation fails its checks. It writes the most turns it had in flight at
once to `vars.inflight_file`.

- python targets: `concurrent_app:answer` (sync, the official `openai` SDK's client,
  built once and shared by every turn) and `concurrent_app:answer_async` (`AsyncOpenAI`);
- a command target: `python concurrent_app.py`, speaking the concurrent JSON-lines
  protocol (each line's `id` echoed in its reply and sent as `X-Turncheck-Turn` on the
  model call unless the environment's `APP_FORWARD_ID` is `0`), one thread per line, the
  model called with `urllib`. A line whose last
  message is `crash` makes the process exit with code 3 once `vars.crash_when` other
  lines are in flight and `vars.answered_first` quick lines (`quick` in the message: no
  wait, no model call) have been answered; a line with `slow` waits 60 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import urllib.request
from typing import Any

MODEL = "gpt-4o-mini"
LOCK = threading.Lock()
IN_FLIGHT = [0, 0]  # now, most
ANSWERED_QUICK = [0]
CLIENTS: dict[str, Any] = {}


def _enter(variables: dict[str, str]) -> None:
    with LOCK:
        IN_FLIGHT[0] += 1
        IN_FLIGHT[1] = max(IN_FLIGHT)
        path = variables.get("inflight_file")
        if path:
            with open(path, "w") as file:
                file.write(str(IN_FLIGHT[1]))


def _leave() -> None:
    with LOCK:
        IN_FLIGHT[0] -= 1


def _reply(messages: list[dict[str, str]], answer: str) -> str:
    said = " | ".join(m["content"] for m in messages if m["role"] == "user")
    return f"{said} -> {answer}"


def _client(openai_base_url: str, kind: str) -> Any:
    import openai

    key = f"{kind} {openai_base_url}"
    if key not in CLIENTS:
        make = openai.AsyncOpenAI if kind == "async" else openai.OpenAI
        CLIENTS[key] = make(base_url=openai_base_url, api_key="unused", max_retries=0)
    return CLIENTS[key]


def answer(messages: list[dict[str, str]], vars: dict[str, str], openai_base_url: str) -> str:
    _enter(vars)
    try:
        time.sleep(float(vars.get("delay", "0.1")))
        made = _client(openai_base_url, "sync").chat.completions.create(
            model=MODEL, messages=messages)
        return _reply(messages, made.choices[0].message.content or "")
    finally:
        _leave()


async def answer_async(messages: list[dict[str, str]], vars: dict[str, str],
                       openai_base_url: str) -> str:
    _enter(vars)
    try:
        await asyncio.sleep(float(vars.get("delay", "0.1")))
        made = await _client(openai_base_url, "async").chat.completions.create(
            model=MODEL, messages=messages)
        return _reply(messages, made.choices[0].message.content or "")
    finally:
        _leave()


# -- the command target -----------------------------------------------------------------

WRITE = threading.Lock()


def _ask_model(messages: list[dict[str, str]], turn_id: str) -> str:
    headers = {"content-type": "application/json",
               "authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"}
    if os.environ.get("APP_FORWARD_ID") != "0":
        headers["X-Turncheck-Turn"] = turn_id
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", method="POST",
        data=json.dumps({"model": MODEL, "messages": messages}).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(json.load(response)["choices"][0]["message"]["content"])


def _crash_when_ready(variables: dict[str, str]) -> None:
    others, quick = int(variables.get("crash_when", "0")), int(variables.get("answered_first", "0"))
    while True:
        with LOCK:
            if IN_FLIGHT[0] - 1 >= others and ANSWERED_QUICK[0] >= quick:
                os._exit(3)
        time.sleep(0.01)


def _answer_line(turn: dict[str, Any]) -> None:
    variables, last = turn["vars"], turn["last_message"]
    _enter(variables)
    try:
        if last == "crash":
            _crash_when_ready(variables)
        if "quick" in last:
            text = _reply(turn["messages"], "quick")
        else:
            time.sleep(60 if "slow" in last else float(variables.get("delay", "0.1")))
            text = _reply(turn["messages"], _ask_model(turn["messages"], turn["id"]))
        with WRITE:
            sys.stdout.write(json.dumps({"id": turn["id"], "text": text}) + "\n")
            sys.stdout.flush()
        if "quick" in last:  # counted once written: the crash waits for it
            with LOCK:
                ANSWERED_QUICK[0] += 1
    finally:
        _leave()


def main() -> None:
    for line in sys.stdin:
        threading.Thread(target=_answer_line, args=(json.loads(line),), daemon=True).start()


if __name__ == "__main__":
    main()
