"""Sampling parameters checked against each provider's documented range before the first
request: an Anthropic temperature of 1.5 passes the runtime's own 0–2 and would make every
episode an infrastructure error (HTTP 400) instead of one line at the start.

Ranges, from the providers' API references:

* OpenAI (and OpenAI-compatible servers, Gemini's own API): ``temperature`` 0–2, ``top_p`` 0–1;
* Anthropic Messages API (also through Bedrock and Vertex AI): ``temperature`` 0–1, ``top_p`` 0–1;
* Mistral: ``temperature`` 0–1.5, ``top_p`` 0–1;
* Cohere: ``temperature`` 0–1, ``p`` 0.01–0.99;
* ``max_tokens`` at least 1 everywhere, and at most the model's output limit where litellm's
  model table knows it (``max_output_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.llm.provider_rules import provider_of


@dataclass(frozen=True)
class Ranges:
    provider: str
    temperature: tuple[float, float] = (0.0, 2.0)
    top_p: tuple[float, float] = (0.0, 1.0)


ANTHROPIC = Ranges("Anthropic", temperature=(0.0, 1.0))
DEFAULT = Ranges("OpenAI-compatible")
BY_PROVIDER = {
    "anthropic": ANTHROPIC,
    "mistral": Ranges("Mistral", temperature=(0.0, 1.5)),
    "cohere": Ranges("Cohere", temperature=(0.0, 1.0), top_p=(0.01, 0.99)),
    "cohere_chat": Ranges("Cohere", temperature=(0.0, 1.0), top_p=(0.01, 0.99)),
    "gemini": Ranges("Gemini"),
}


def ranges_for(model: str) -> Ranges:
    provider = provider_of(model)
    name = model.split("/", 1)[-1].lower()
    if provider in ("bedrock", "vertex_ai") and ("anthropic" in name or "claude" in name):
        return ANTHROPIC
    return BY_PROVIDER.get(provider, DEFAULT)


def output_limit(model: str) -> int | None:
    """The model's largest answer in tokens, where litellm's model table says (else None)."""
    import litellm

    try:
        limit = litellm.get_model_info(model).get("max_output_tokens")
    except Exception:  # noqa: BLE001 - a model litellm does not know: nothing to check against
        return None
    return int(limit) if isinstance(limit, (int, float)) and limit > 0 else None


def range_problems(model: str, temperature: float | None = None, top_p: float | None = None,
                   max_tokens: int | None = None) -> list[str]:
    """What in these settings the provider of ``model`` documents as out of range."""
    r = ranges_for(model)
    out = []
    for name, value, (low, high) in (("temperature", temperature, r.temperature),
                                     ("top_p", top_p, r.top_p)):
        if value is not None and not low <= value <= high:
            out.append(f"{name} {value:g} is outside {r.provider}'s range {low:g} to {high:g}")
    if max_tokens is not None:
        limit = output_limit(model)
        if max_tokens < 1:
            out.append(f"max tokens {max_tokens} is below 1")
        elif limit is not None and max_tokens > limit:
            out.append(f"max tokens {max_tokens} is above the model's output limit {limit}")
    return out
