"""The tool-using refund app (`target_apps/refund_app.py`) and its scripted model, for the
tests of what the app sent (docs/targets.md, "What the app sent")."""

from __future__ import annotations

import sys
from typing import Any

from tests.support.scripted_server import Json, ToolCalls, conversation_of, tool_results
from tests.support.target_helpers import APPS

REFUND_APP = APPS / "refund_app.py"


def _offered(body: Json) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        names.append(function.get("name"))
    return names


def _system(body: Json) -> str:
    system = str(body.get("system") or "")
    return system + "".join(str(m.get("content")) for m in conversation_of(body)
                            if m.get("role") == "system")


def refund_model(body: Json) -> str | ToolCalls:
    """The scripted model of the refund desk. Asked for a refund, it looks the order up,
    then refunds it, then says so; asked for an order's status, it looks it up. Only tools
    it is offered are called. A system prompt holding LOOP makes it look the order up
    three times; REFUND_FIRST refunds before it looks the order up; REFUND_ALWAYS refunds
    when asked for the status too."""
    said = [m for m in conversation_of(body) if m.get("role") == "user"]
    # What the user said: not the tool results an Anthropic request sends as user turns.
    asked = " ".join(m["content"] for m in said if isinstance(m.get("content"), str))
    system = _system(body)
    if "status" in asked and "REFUND_ALWAYS" not in system:
        return _status(body)
    if "refund" not in asked.lower() and "status" not in asked:
        return "Hello, how can I help?"
    plan = ["lookup_order", "issue_refund"]
    if "LOOP" in system:
        plan = ["lookup_order", "lookup_order", "lookup_order", "issue_refund"]
    if "REFUND_FIRST" in system:
        plan = ["issue_refund", "lookup_order"]
    plan = [name for name in plan if name in _offered(body)]
    done = len(tool_results(body))
    if done < len(plan):
        name = plan[done]
        arguments: dict[str, Any] = {"order_id": "A1"}
        if name == "issue_refund":
            arguments["amount"] = 42.0
        return ToolCalls.one(name, **arguments)
    return "Refunded 42.0 for order A1." if "issue_refund" in plan else "I cannot refund."


def _status(body: Json) -> str | ToolCalls:
    if not tool_results(body) and "lookup_order" in _offered(body):
        return ToolCalls.one("lookup_order", order_id="A1")
    return "Order A1 was delivered."


REFUND_TURNS = """\
evals:
  - name: refund
    turns:
      - prompt: Hi there.
        checks: [{match: "*help*"}]
      - prompt: Please refund order A1.
        checks: [{match: "*Refunded*"}]
"""


def refund_target(env: dict[str, str], turns: str = REFUND_TURNS) -> str:
    """A suite talking to the refund app over HTTP, with `turns` as its evals."""
    variables = ", ".join(f'{name}: "{value}"' for name, value in env.items())
    return f"""\
metadata:
  name: refund-desk
  model: gpt-4o-mini
  target:
    start: {sys.executable} {REFUND_APP} {{port}}
    ready: /health
    ready_timeout: 20
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}", session_id: "{{{{ session_id }}}}"}}
      reply: reply
    session: client
    stateful: true
    env: {{{variables}}}
{turns}"""
