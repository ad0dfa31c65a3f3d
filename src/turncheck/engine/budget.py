"""Hard budgets for live provider calls (docs/budgets.md).

A budget caps the USD cost and/or the tokens of the calls a run sends to
providers over the network: model turns, judge and embedding calls, sample-file
graders, protocol turns and every repeat. Before a call goes out, its worst
case (`CallPlan`: an upper bound of its input tokens plus its maximum output
tokens, priced) is *reserved* on every budget that applies (the run's and the
suite's). A call whose reservation would cross a budget is not sent: it raises
`BudgetExceeded`, and the eval it belongs to ends `skipped` with reason `budget`.
After the call the reservation is *settled* to the usage the provider reported.

Replayed calls cost nothing: in replay mode nothing is reserved, and in record
mode the reservation is made by the cassette transport only when a request
misses the cassette and has to go to the network (`NETWORK_GATE`).

Reservations and settlements are plain synchronous code with no `await` in
between, so under asyncio (one event loop) they are atomic: however many evals
run at once, the sum of spent and reserved amounts never passes a limit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from turncheck.choices import Mode
from turncheck.engine.pricing import Pricer
from turncheck.engine.tokens import input_token_bound
from turncheck.formats.budget import BudgetLimits
from turncheck.providers.base import NETWORK_GATE, ChatMessage, ProviderError
from turncheck.report.run import BudgetOutcome
from turncheck.report.spend import Usage

Response = TypeVar("Response")

DEFAULT_MAX_OUTPUT_TOKENS = 4096
"""Output tokens reserved (and assumed by worst-case estimates) for a suite without
`max_output_tokens`. Not sent to the provider: set `max_output_tokens` for a hard cap."""

SKIP_REASON = "budget"


class BudgetExceeded(ProviderError):
    """A live call was not sent because its worst case would cross a budget."""

    def __init__(self, message: str) -> None:
        super().__init__(f"skipped: {SKIP_REASON}: {message}")
        self.detail = message


@dataclass(frozen=True)
class CallPlan:
    """The worst case of one call: what is reserved before it is sent."""

    model: str
    price_provider_id: str | None
    input_tokens: int
    max_output_tokens: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.max_output_tokens


@dataclass
class Budget:
    """One set of limits and what has been spent and reserved against them."""

    label: str
    limits: BudgetLimits
    spent_usd: float = 0.0
    spent_tokens: int = 0
    reserved_usd: float = 0.0
    reserved_tokens: int = 0
    refused_calls: int = 0

    def fits(self, tokens: int, cost: float | None) -> str | None:
        """None if `tokens`/`cost` more fit; otherwise why not."""
        max_tokens, max_cost = self.limits.max_live_tokens, self.limits.max_cost_usd
        committed = self.spent_tokens + self.reserved_tokens
        if max_tokens is not None and committed + tokens > max_tokens:
            return (f"{self.label} --max-live-tokens {max_tokens}: "
                    f"{self.spent_tokens} spent, the next call may use up to {tokens}")
        if max_cost is not None:
            if cost is None:
                return f"{self.label} --max-cost-usd: the model has no known price"
            if self.spent_usd + self.reserved_usd + cost > max_cost + 1e-12:
                return (f"{self.label} --max-cost-usd {max_cost:g}: ${self.spent_usd:.6f} spent, "
                        f"the next call may cost up to ${cost:.6f}")
        return None

    def outcome(self) -> BudgetOutcome:
        return BudgetOutcome(
            scope=self.label,
            max_cost_usd=None if self.limits.max_cost_usd is None
            else float(self.limits.max_cost_usd),
            max_live_tokens=self.limits.max_live_tokens,
            spent_usd=round(self.spent_usd, 9),
            spent_tokens=self.spent_tokens,
            refused_calls=self.refused_calls,
        )


@dataclass
class Reservation:
    budgets: Sequence[Budget]
    tokens: int
    cost: float
    open: bool = True

    def _take_back(self) -> None:
        for budget in self.budgets:
            budget.reserved_tokens -= self.tokens
            budget.reserved_usd -= self.cost
        self.open = False

    def release(self) -> None:
        """The call never reached the provider (or was answered from the cassette)."""
        if self.open:
            self._take_back()

    def settle(self, tokens: int, cost: float | None) -> None:
        """Replace the reservation by the call's actual usage."""
        if not self.open:
            return
        self._take_back()
        for budget in self.budgets:
            budget.spent_tokens += tokens
            budget.spent_usd += self.cost if cost is None else cost


def reserve(budgets: Sequence[Budget], tokens: int, cost: float | None) -> Reservation:
    """Reserve on every budget or on none; `BudgetExceeded` if one has no room."""
    for budget in budgets:
        why = budget.fits(tokens, cost)
        if why is not None:
            for refusing in budgets:
                refusing.refused_calls += 1
            raise BudgetExceeded(why)
    taken = 0.0 if cost is None else cost
    for budget in budgets:
        budget.reserved_tokens += tokens
        budget.reserved_usd += taken
    return Reservation(budgets, tokens, taken)


@dataclass
class Ledger:
    """The run's budgets: one for the whole run and one per suite with a `budget:` block."""

    pricer: Pricer
    limits: BudgetLimits = field(default_factory=BudgetLimits)
    run: Budget = field(init=False)
    suites: list[Budget] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.run = Budget("run", self.limits)

    def guard(self, mode: Mode, suite_label: str, suite_limits: BudgetLimits | None) -> CallGuard:
        budgets = [self.run] if self.limits else []
        if isinstance(suite_limits, BudgetLimits) and suite_limits:
            suite = Budget(suite_label, suite_limits)
            self.suites.append(suite)
            budgets.append(suite)
        return CallGuard(tuple(budgets), self.pricer, mode)

    def outcomes(self) -> list[BudgetOutcome]:
        return [b.outcome() for b in ([self.run] if self.limits else []) + self.suites]


@dataclass(frozen=True)
class CallGuard:
    """Reserves, settles or releases each call of one session on its budgets."""

    budgets: tuple[Budget, ...]
    pricer: Pricer
    mode: Mode

    async def call(
        self,
        plan: Callable[[], CallPlan],
        send: Callable[[], Awaitable[Response]],
        used: Callable[[Response], tuple[Usage, bool, bool]],
    ) -> Response:
        """`send()`, under the budgets. `used(response)` is (usage, fully reported, replayed)."""
        if not self.budgets or self.mode == "replay":
            return await send()
        held: list[tuple[Reservation, CallPlan]] = []

        def gate() -> None:
            if not held:
                worst = plan()
                held.append((reserve(self.budgets, worst.tokens, self._cost(worst)), worst))

        if self.mode == "live":
            gate()
        token = NETWORK_GATE.set(gate)
        try:
            response = await send()
        except BudgetExceeded:
            raise
        except BaseException:
            # The request may have reached the provider: keep the worst case as spent.
            for reservation, _ in held:
                reservation.settle(reservation.tokens, None)
            raise
        finally:
            NETWORK_GATE.reset(token)
        usage, reported, replayed = used(response)
        for reservation, worst in held:
            if replayed:
                reservation.release()
            elif not reported:
                reservation.settle(reservation.tokens, None)
            else:
                actual = self.pricer.cost(usage, worst.model, worst.price_provider_id)
                reservation.settle(usage.total, actual)
        return response

    def _cost(self, worst: CallPlan) -> float | None:
        usage = Usage(input_tokens=worst.input_tokens, output_tokens=worst.max_output_tokens)
        return self.pricer.cost(usage, worst.model, worst.price_provider_id)


def chat_plan(
    model: str,
    price_provider_id: str | None,
    messages: Sequence[ChatMessage],
    max_output_tokens: int | None,
    tools_text: str = "",
) -> CallPlan:
    """The worst case of one chat call; `tools_text` is the tools it offers (JSON), and
    the messages' tool calls count with their text."""
    texts = [m.content for m in messages]
    texts += [call.name + call.arguments for m in messages for call in m.tool_calls]
    if tools_text:
        texts.append(tools_text)
    return CallPlan(
        model, price_provider_id, input_token_bound(model, texts),
        max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
    )


def embedding_plan(model: str, price_provider_id: str | None, inputs: Sequence[str]) -> CallPlan:
    return CallPlan(model, price_provider_id, input_token_bound(model, inputs, chat=False), 0)
