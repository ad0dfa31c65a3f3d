"""The scripted models the app examples are recorded against (tools/record_app_example.py):
examples/support-bot/ (a support bot that looks orders up with a tool; a simulated
customer talking to it, and the judge of that conversation) and examples/python-target/
(an FAQ bot). They answer from the request like small models following their system
prompt would; the requests and answers are real HTTP."""

from __future__ import annotations

import json
import re

from tests.support.scripted_server import Json, ToolCalls, _content_text, conversation_of

ORDER_ID = re.compile(r"\b[A-Z]\d{4}\b")
NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)


def app_example_model(body: Json) -> str | ToolCalls:
    """One answer, by the example app (or the simulated customer, or the judge) that sent
    `body`."""
    system = _system(body)
    if "turncheck-simulated-user" in system:
        return customer_model(body)
    if "turncheck-judge" in system or "turncheck-simulator-review" in system:
        return judge_model(body)
    if "support bot" in system:
        return support_model(body)
    return faq_model(body)


ARRIVAL = re.compile(r"arrive (?:on )?(\d+ \w+)")


def customer_model(body: Json) -> str:
    """The simulated customer: asks about the order it is told to until it hears when the
    order arrives, then stops with its goal met."""
    told = _user_texts(body)[-1] if _user_texts(body) else ""
    if ARRIVAL.search(told):
        return json.dumps({"message": "", "stop": True, "reason": "goal_met"})
    order = ORDER_ID.search(_system(body))
    return json.dumps({"message": f"It is order {order.group() if order else 'A1002'}. "
                                  "When will it arrive?", "stop": False, "reason": ""})


def judge_model(body: Json) -> str:
    """The judge (and the simulator's reviewer): passes a conversation in which the bot
    said when the order arrives."""
    said = " ".join(_user_texts(body))
    passed = ARRIVAL.search(said) is not None or "turncheck-simulator-review" in _system(body)
    reason = "The bot said when the order arrives." if passed else "No arrival date given."
    if "turncheck-simulator-review" in _system(body):
        reason = "The customer kept to the persona and the goal."
    return json.dumps({"pass": passed, "reason": reason})


def support_model(body: Json) -> str | ToolCalls:
    """Looks orders up with `lookup_order` when the system prompt says to; without that
    instruction it guesses, as small models do."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return _order_answer(_called_order(body), json.loads(last["content"]))
    said = _user_texts(body)
    asked = said[-1] if said else ""
    order = ORDER_ID.search(asked)
    if order and "lookup_order" in _system(body):
        return ToolCalls.one("lookup_order", order_id=order.group())
    if order:
        return f"Your order {order.group()} is on its way and should arrive soon."
    if "who am i" in asked.lower():
        return _recall(said)
    name = NAME.search(asked)
    if name:
        return f"Hello {name.group(1)}! How can I help you today?"
    return "How can I help you with your order?"


def _order_answer(order_id: str, result: Json) -> str:
    if "error" in result:
        return f"Sorry, I could not find order {order_id}. Please check the number."
    if result["status"] == "shipped":
        return (f"Your order {order_id} has shipped with {result['carrier']} and arrives "
                f"on {result['arrives']}.")
    return f"Your order {order_id} is {result['status']}; it should arrive on {result['arrives']}."


def _recall(said: list[str]) -> str:
    names = [m.group(1) for text in said for m in NAME.finditer(text)]
    orders = [m.group() for text in said for m in ORDER_ID.finditer(text)]
    if not names:
        return "I don't know your name yet."
    about = f", and we talked about your order {orders[-1]}" if orders else ""
    return f"You are {names[-1]}{about}."


def _called_order(body: Json) -> str:
    calls = [call for m in body["messages"] if m.get("role") == "assistant"
             for call in m.get("tool_calls") or []]
    arguments = json.loads(calls[-1]["function"]["arguments"]) if calls else {}
    return str(arguments.get("order_id", "?"))


def faq_model(body: Json) -> str:
    said = _user_texts(body)
    asked = said[-1].lower() if said else ""
    if "saturday" in asked:
        return "On Saturdays we are open from 10:00 to 14:00."
    if "sunday" in asked:
        return "We are closed on Sundays."
    if "receipt" in asked:
        return "Yes: please bring the receipt or your order number."
    if "return" in asked:
        return "Yes, you can return an item within 30 days."
    return "I can answer questions about our opening hours and returns."


def _system(body: Json) -> str:
    return " ".join(_content_text(m.get("content")) for m in conversation_of(body)
                    if m.get("role") == "system")


def _user_texts(body: Json) -> list[str]:
    return [_content_text(m.get("content")) for m in conversation_of(body)
            if m.get("role") == "user"]
