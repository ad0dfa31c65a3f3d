"""A tiny FAQ bot that turncheck calls as a Python function (`faq.bot:answer`).

It answers from the facts in its system prompt with the official `openai` SDK
(`pip install openai`), through the base URL turncheck gives it: the recording proxy,
which holds the real key.
"""

from __future__ import annotations

from openai import OpenAI

MODEL = "gpt-4o-mini"
SYSTEM_PROMPT = (
    "You answer questions about Example Co.'s shop from these facts only. Opening hours: "
    "Monday to Friday 9:00-18:00, Saturday 10:00-14:00, closed on Sunday. Returns: within "
    "30 days, with the receipt or the order number."
)


def answer(messages: list[dict[str, str]], openai_base_url: str) -> str:
    """The bot's reply to the conversation so far (turncheck sends all of it each turn)."""
    client = OpenAI(base_url=openai_base_url, api_key="unused: the proxy adds the key")
    reply = client.chat.completions.create(
        model=MODEL, temperature=0,
        messages=[{"role": "system", "content": SYSTEM_PROMPT}, *messages],
    )
    return reply.choices[0].message.content or ""
