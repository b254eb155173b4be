"""What a model costs: the user's prices first (``prices:`` in a config, ``--price MODEL=IN/OUT``,
USD per million tokens), then litellm's price table.

A model neither knows is *unpriced*: its calls are counted at $0, which is why a run with a cost
limit refuses to start while any role is unpriced (a user who means "free" says ``=0/0``). The
embedded model runs on this machine and costs nothing by definition.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from envs import facts, reads_bundled_price_map

FREE_PREFIXES = ("local/",)
"""Models that run in this process: they spend no money."""

PRICE_TEXT = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*/\s*([0-9]*\.?[0-9]+)\s*")


class Price(BaseModel):
    """USD per million tokens, prompt (``input``) and completion (``output``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    @classmethod
    def parse(cls, value: Any) -> "Price":
        """``"3/15"``, ``{"input": 3, "output": 15}`` or a ``Price``; ``ValueError`` naming what
        is accepted otherwise."""
        if isinstance(value, Price):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(dict(value))
        match = PRICE_TEXT.fullmatch(str(value))
        if not match:
            raise ValueError(f"price {value!r}: give IN/OUT in USD per million tokens, e.g. 3/15 "
                             "(0/0 for a free model)")
        return cls(input=float(match[1]), output=float(match[2]))

    def per_token(self) -> tuple[float, float]:
        return self.input / 1e6, self.output / 1e6

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def parse_option(text: str) -> tuple[str, Price]:
    """``--price MODEL=IN/OUT`` → (model, price); ``ValueError`` with what is accepted."""
    model, sep, price = str(text).rpartition("=")
    if not sep or not model.strip():
        raise ValueError(f"--price {text!r}: give MODEL=IN/OUT in USD per million tokens, e.g. "
                         "--price gemini/gemini-3-pro-preview=2/12")
    return model.strip(), Price.parse(price)


def litellm_price(model: str) -> Price | None:
    """litellm's price for ``model`` (its name, or the name without the provider prefix).

    Before litellm is imported (seconds), the answer an earlier command remembered for the same
    litellm reading its bundled price table (``envs.facts``): a dry run prices a run at once.
    Asked once a process (a run asks before each model call)."""
    if model in _ASKED:
        return _ASKED[model]
    key = _table_key()
    if "litellm" not in sys.modules:
        known = (facts.read(PRICE_FACT, key) or {}).get(model, False)
        if known is not False:
            _ASKED[model] = None if known is None else Price(input=known[0], output=known[1])
            return _ASKED[model]
    import litellm  # the runtime registers prices only for the free local/ models

    info = litellm.model_cost.get(model) or litellm.model_cost.get(model.split("/", 1)[-1])
    found = None
    if info and ("input_cost_per_token" in info or "output_cost_per_token" in info):
        found = Price(input=float(info.get("input_cost_per_token") or 0.0) * 1e6,
                      output=float(info.get("output_cost_per_token") or 0.0) * 1e6)
    known = facts.read(PRICE_FACT, key) or {}
    answer = None if found is None else [found.input, found.output]
    if known.get(model, False) != answer:
        facts.write(PRICE_FACT, key, {**known, model: answer})
    _ASKED[model] = found
    return found


PRICE_FACT = "litellm-prices"
_ASKED: dict[str, Price | None] = {}


def _table_key() -> str | None:
    """litellm's version when it reads the price table it ships (None, nothing remembered, when
    it fetches one: that table changes under the same version)."""
    if not reads_bundled_price_map():
        return None
    from importlib import metadata

    try:
        return f"litellm {metadata.version('litellm')} bundled table"
    except metadata.PackageNotFoundError:
        return None


def price_of(model: str, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: the user's, else free for the embedded model, else litellm's;
    ``None`` when nobody prices it."""
    if prices and model in prices:
        return prices[model]
    if model.startswith(FREE_PREFIXES):
        return Price(input=0.0, output=0.0)
    return litellm_price(model)


def unpriced_roles(models: Mapping[str, str], prices: Mapping[str, Price] | None = None) -> dict[str, str]:
    """role → model for every role whose model has no price."""
    return {role: model for role, model in models.items() if price_of(model, prices) is None}
