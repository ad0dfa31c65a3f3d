"""Prices from genai-prices, taken at one fixed timestamp per run.

Base and head of a comparison are priced at the same instant so a price change
between the two runs can never show up as a cost delta. A model genai-prices
does not know is *unpriced* (None), never $0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version

from turncheck.lazy import submodules_without_package_init
from turncheck.report.run import PriceSource
from turncheck.report.spend import Usage

# genai-prices' `__init__` also loads its price-update thread and the HTTP client it
# fetches with (httpx2); turncheck prices from the bundled snapshot only, so a run loads
# just the snapshot and its types (`genai_prices.calc_price` is the same one call).
_snapshot, _types = submodules_without_package_init("genai_prices", "data_snapshot", "types")

__all__ = ["Pricer"]

LIBRARY = "genai-prices"


@dataclass
class Pricer:
    timestamp: datetime
    unpriced: set[str] = field(default_factory=set)
    _cache: dict[tuple[str, str | None], bool] = field(default_factory=dict)
    # The price of each (model, provider, input, output and cached tokens) seen: a look-up
    # in genai-prices matches the model id against every provider's patterns.
    _costs: dict[tuple[str, str | None, int, int, int], float] = field(default_factory=dict)

    @classmethod
    def at(cls, timestamp: str | datetime | None = None) -> Pricer:
        if timestamp is None:
            return cls(datetime.now(UTC).replace(microsecond=0))
        if isinstance(timestamp, str):
            timestamp = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        return cls(timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=UTC))

    @property
    def source(self) -> PriceSource:
        return PriceSource(
            library=LIBRARY,
            version=version(LIBRARY),
            timestamp=self.timestamp.isoformat().replace("+00:00", "Z"),
        )

    def cost(self, usage: Usage, model: str, provider_id: str | None,
             cached_input_tokens: int = 0) -> float | None:
        """USD for `usage` of `model`, or None when the model has no known price.

        `cached_input_tokens` (of `usage.input_tokens`) are priced at the model's
        cache-read rate; reasoning tokens are part of the output tokens, as providers
        count and bill them."""
        if self._cache.get((model, provider_id)) is False:
            return None
        cached = min(cached_input_tokens, usage.input_tokens)
        key = (model, provider_id, usage.input_tokens, usage.output_tokens, cached)
        cost = self._costs.get(key)
        if cost is None:
            cost = self._calculate(usage, model, provider_id, cached)
            if cost is not None:
                self._costs[key] = cost
        return cost

    def _calculate(self, usage: Usage, model: str, provider_id: str | None,
                   cached: int) -> float | None:
        try:
            price = _snapshot.get_snapshot().calc(
                _types.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                             cache_read_tokens=cached or None),
                model, provider_id, None, self.timestamp, None,
            )
        except LookupError:
            self._cache[(model, provider_id)] = False
            self.unpriced.add(model)
            return None
        self._cache[(model, provider_id)] = True
        return float(price.total_price)


