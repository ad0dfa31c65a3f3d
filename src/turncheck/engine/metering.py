"""Provider calls with their usage and cost counted, shared by eval and protocol runs.

Judge and embedding usage (and cost) are summed apart from the model's, on
whatever state object the caller keeps (`JudgeMeter`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from turncheck.engine.pricing import Pricer
from turncheck.engine.redaction import Redactor
from turncheck.engine.session import SuiteSession
from turncheck.engine.usage import chat_usage, embedding_usage
from turncheck.providers.base import AnswerSchema, ChatMessage
from turncheck.providers.factory import env_credentials
from turncheck.report.spend import Usage


class JudgeMeter(Protocol):
    judge_usage: Usage
    judge_costs: list[float | None]


async def metered_judge(
    session: SuiteSession,
    pricer: Pricer,
    messages: list[ChatMessage],
    schema: AnswerSchema,
    meter: JudgeMeter,
) -> str:
    """The judge model's answer to `messages` (asked to follow `schema`); its usage and
    cost go to `meter`."""
    response = await session.judge(messages, schema)
    usage = chat_usage(response)
    meter.judge_usage += usage
    meter.judge_costs.append(
        pricer.cost(usage, session.judge_model, session.judge_price_provider_id)
    )
    return response.text


async def metered_embed(
    session: SuiteSession, pricer: Pricer, inputs: list[str], meter: JudgeMeter
) -> list[list[float]]:
    """One embedding per input; usage and cost go to `meter` (with the judge's)."""
    response = await session.embed(inputs)
    usage = embedding_usage(response)
    meter.judge_usage += usage
    meter.judge_costs.append(
        pricer.cost(usage, session.embedding_model, session.embedding_price_provider_id)
    )
    if len(response.vectors) != len(inputs):
        raise ValueError(f"expected {len(inputs)} embeddings, got {len(response.vectors)}")
    return response.vectors


def session_redactor(session: SuiteSession, env: Mapping[str, str]) -> Redactor:
    """Scrubs the suite's secrets and every API key from results."""
    return Redactor([*session.secrets.values(), *env_credentials(env)])
