"""What the runtime makes of each provider's real answers, through litellm and the model layer:
text beside function calls, parallel calls, Gemini's thought signatures sent back, provider
faults (MALFORMED_FUNCTION_CALL, safety blocks, the token limit inside a tool call) retried and
then an error of the right kind, 429 with a retry hint and 529 overloaded retried. Never an
empty turn passed on as the model's.
"""

from __future__ import annotations

import json
import time

import pytest

from runtime.episode.failures import error_kind
from runtime.llm.layer import Meter, ModelLayer, ModelSpec, ProviderFault
from tests.provider_fakes import FAKES, MODELS, Answer

TOOLS = [{"type": "function", "function": {"name": "get_order", "description": "an order",
                                           "parameters": {"type": "object", "properties": {
                                               "order_id": {"type": "string"}}, "required": ["order_id"]}}},
         {"type": "function", "function": {"name": "list_all_product_types", "description": "all",
                                           "parameters": {"type": "object", "properties": {}}}}]
CONVERSATION = [{"role": "system", "content": "Help the user."},
                {"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": "Where is order #W1?"}]


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY"):
        monkeypatch.setenv(name, "test-key-000")


def client(fake, provider: str, meter: Meter | None = None, backoff_s: float = 0.01):
    layer = ModelLayer({"model": ModelSpec(MODELS[provider], api_base=fake.api_base, max_tokens=256)},
                       retries=3, backoff_s=backoff_s, max_backoff_s=2.0)
    return layer.client("model", "executor", meter or Meter())


def scripted(*answers: Answer):
    """Answers in order; the last one repeats."""
    queue = list(answers)
    return lambda turn: queue.pop(0) if len(queue) > 1 else queue[0]


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_text_beside_parallel_calls_arrives_whole(provider):
    both = Answer(text="Let me look that up.", calls=[("get_order", {"order_id": "#W1"}),
                                                       ("get_order", {"order_id": "#W2"})])
    with FAKES[provider](scripted(both)) as fake:
        reply = client(fake, provider).complete(CONVERSATION, tools=TOOLS)
    assert reply.content == "Let me look that up."
    assert [json.loads(c["function"]["arguments"]) for c in reply.tool_calls] == [
        {"order_id": "#W1"}, {"order_id": "#W2"}]
    assert not fake.refusals


def test_gemini_thought_signatures_go_back_with_the_history():
    """Gemini 3 refuses a history whose function call lost its signature; the runtime's own
    message shape (``ChatReply.as_message``) keeps it."""
    first = Answer(thought="The user wants order W1.", text="Checking.",
                   calls=[("get_order", {"order_id": "#W1"}), ("get_order", {"order_id": "#W2"})])
    with FAKES["gemini"](scripted(first, Answer(text="It has shipped."))) as fake:
        model = client(fake, "gemini")
        reply = model.complete(CONVERSATION, tools=TOOLS)
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "shipped"} for c in reply.tool_calls]
        again = model.complete([*CONVERSATION, reply.as_message(), *results], tools=TOOLS)
        assert again.content == "It has shipped." and not fake.refusals
        sent = fake.requests[-1]["body"]["contents"]
        calls = [p for c in sent for p in c["parts"] if "function_call" in p or "functionCall" in p]
        assert calls[0].get("thoughtSignature") in fake.signatures and fake.dummy_signatures == 0
        # the check can tell: a history that lost the signature goes out with litellm's
        # documented placeholder (accepted, at a cost in quality), not the model's own
        stripped = {**reply.as_message(), "tool_calls": [
            {**c, "id": c["id"].split("__thought__")[0]} for c in reply.tool_calls]}
        model.complete([*CONVERSATION, stripped, *results], tools=TOOLS)
        assert fake.dummy_signatures == 1


FAULTS = [("gemini", "malformed_call", "MALFORMED_FUNCTION_CALL", "model_output"),
          ("gemini", "blocked", "content_filter", "infrastructure"),
          ("anthropic", "blocked", "content_filter", "infrastructure"),
          ("openai", "blocked", "content_filter", "infrastructure"),
          ("dashscope", "blocked", "content_filter", "infrastructure")]


@pytest.mark.parametrize("provider,special,reason,kind", FAULTS)
def test_a_provider_fault_is_retried_then_kept_in_the_meter(provider, special, reason, kind):
    good = Answer(calls=[("get_order", {"order_id": "#W1"})])
    meter = Meter()
    with FAKES[provider](scripted(Answer(calls=[("get_order", {"order_id": "#W1"})], special=special),
                                  good)) as fake:
        reply = client(fake, provider, meter).complete(CONVERSATION, tools=TOOLS)
    assert len(fake.turns) == 2, "the faulty answer must have been retried"
    assert json.loads(reply.tool_calls[0]["function"]["arguments"]) == {"order_id": "#W1"}
    assert meter.finish_reasons["executor"] == {reason: 1}


@pytest.mark.parametrize("provider,special,reason,kind", FAULTS)
def test_a_provider_fault_that_persists_is_an_error_of_its_kind(provider, special, reason, kind):
    meter = Meter()
    with FAKES[provider](scripted(Answer(calls=[("get_order", {"order_id": "#W1"})],
                                         special=special))) as fake:
        with pytest.raises(ProviderFault) as caught:
            client(fake, provider, meter).complete(CONVERSATION, tools=TOOLS)
    assert len(fake.turns) == 3  # the first try and two more
    assert error_kind(caught.value) == kind
    assert sum(meter.finish_reasons["executor"].values()) == 3


@pytest.mark.parametrize("provider,reason", [("gemini", "MAX_TOKENS"), ("anthropic", "length"),
                                             ("openai", "length"), ("dashscope", "length")])
def test_a_tool_call_cut_by_the_token_limit_is_flagged_not_passed_as_whole(provider, reason):
    """The model's own answer, cut by its budget: kept (once), flagged ``truncated`` with the
    provider's reason in the meter, so the record says so."""
    meter = Meter()
    with FAKES[provider](scripted(Answer(calls=[("get_order", {"order_id": "#W1"})],
                                         special="cut_in_call"))) as fake:
        reply = client(fake, provider, meter).complete(CONVERSATION, tools=TOOLS)
    assert len(fake.turns) == 1 and reply.tool_calls
    assert meter.malformed["executor"].get("truncated") == 1
    assert meter.finish_reasons["executor"] == {reason: 1}


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_a_rate_limit_waits_as_long_as_the_provider_asks(provider):
    with FAKES[provider](scripted(Answer(special="rate_limited", retry_s=0.6), Answer(text="ok"))) as fake:
        started = time.perf_counter()
        reply = client(fake, provider, backoff_s=0.01).complete(CONVERSATION, tools=TOOLS)
        waited = time.perf_counter() - started
    assert reply.content == "ok" and len(fake.turns) == 2
    assert waited >= 0.6, f"retried after {waited:.2f}s although the provider asked for 0.6s"


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_an_overloaded_provider_is_retried(provider):
    with FAKES[provider](scripted(Answer(special="overloaded"), Answer(text="ok"))) as fake:
        reply = client(fake, provider).complete(CONVERSATION, tools=TOOLS)
    assert reply.content == "ok" and len(fake.turns) == 2
