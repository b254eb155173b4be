"""The model layer: retries with backoff, the response cache, accounting, the call context."""

from __future__ import annotations

import litellm
import pytest

from runtime.llm.layer import Meter, ModelError, ModelLayer, ModelSpec, ResponseCache
from testkit.scripted import register_script, text
from tests.test_fail_fast import gold_stub  # noqa: F401 - fixture


def _layer(model: str, **kwargs) -> ModelLayer:
    spec = ModelSpec(model=model)
    return ModelLayer({"model": spec, "user_model": spec}, backoff_s=0.01, **kwargs)


def test_rate_limits_and_5xx_are_retried_then_succeed():
    failures = [litellm.exceptions.RateLimitError("slow down", llm_provider="scripted", model="m"),
                litellm.exceptions.ServiceUnavailableError("down", llm_provider="scripted", model="m")]

    def flaky(request, context):
        if failures:
            raise failures.pop(0)
        return text("fine")

    layer = _layer(register_script("flaky", flaky))
    meter = Meter()
    reply = layer.client("model", "executor", meter).complete([{"role": "user", "content": "hi"}])
    assert reply.content == "fine" and failures == []
    assert meter.as_dict()["total"]["calls"] == 1


def test_gives_up_after_the_retry_budget():
    def always_down(request, context):
        raise litellm.exceptions.RateLimitError("slow down", llm_provider="scripted", model="m")

    layer = _layer(register_script("down", always_down), retries=2)
    with pytest.raises(ModelError, match="gave up after 3 tries"):
        layer.client("model", "executor", Meter()).complete([{"role": "user", "content": "hi"}])


def test_cache_answers_a_repeated_request_without_calling_the_model(tmp_path):
    calls = []
    model = register_script("counted", lambda r, c: calls.append(1) or text(f"answer {len(calls)}"))
    layer = _layer(model, cache=ResponseCache(tmp_path / "cache.sqlite"))
    layer.uncached_prefixes = ()  # let the cache hold this scripted model, as it would a real one
    meter = Meter()
    messages = [{"role": "user", "content": "same question"}]
    first = layer.client("model", "planner", meter, seed=1).complete(messages)
    second = layer.client("model", "planner", meter, seed=1).complete(messages)
    third = layer.client("model", "planner", meter, seed=2).complete(messages)  # another trial
    assert first.content == second.content == "answer 1" and third.content == "answer 2"
    assert len(calls) == 2
    usage = meter.as_dict()["by_purpose"]["planner"]
    assert usage["calls"] == 3 and usage["cached_calls"] == 1


def test_context_reaches_scripts_but_not_the_request():
    seen = {}

    def spy(request, context):
        seen.update(request=request, context=context)
        return text("ok")

    layer = _layer(register_script("spy", spy))
    layer.client("model", "critic", Meter(), seed=7, context={"task_id": "42"}).complete(
        [{"role": "user", "content": "x"}], json_schema={"type": "object"})
    assert seen["context"] == {"task_id": "42", "purpose": "critic"}
    assert "42" not in str(seen["request"]["messages"])
    assert seen["request"]["seed"] == 7
    assert seen["request"]["response_format"]["json_schema"]["schema"] == {"type": "object"}


def test_cost_is_litellms_price_for_a_priced_model_and_zero_for_an_unmapped_one(gold_stub, monkeypatch):
    """The layer takes the price litellm put on the response instead of pricing it again: it
    must still be the price list's (tokens × per-token costs), and 0.0 where there is none.
    The gold-replaying stub answers every model name with 100 prompt and 20 completion tokens."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-dummy")
    costs = {}
    for model in ("openai/gpt-4o-mini", "openai/no-such-priced-model"):
        spec = ModelSpec(model=model, api_base=gold_stub + "/v1")
        meter = Meter()
        ModelLayer({"model": spec}).client("model", "executor", meter).complete(
            [{"role": "user", "content": "hi [task mock/create_task_1]"}])
        costs[model] = meter.as_dict()["total"]["cost_usd"]
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 100 * price["input_cost_per_token"] + 20 * price["output_cost_per_token"]
    assert expected > 0 and costs["openai/gpt-4o-mini"] == pytest.approx(expected)
    assert costs["openai/no-such-priced-model"] == 0.0
