"""Request bodies laid out as the OpenAI SDK's ``create`` writes them (``runtime.llm.body_order``):
the bytes τ³'s release (litellm < 1.82.7, through the SDK) sends, for a spec that asks; every
other request keeps the runtime's litellm order. Measured against a loopback endpoint."""

from __future__ import annotations

import json

from runtime.llm.body_order import SDK_ORDER, members, sdk_layout
from runtime.llm.layer import Meter, ModelLayer, ModelSpec
from testkit.loopback import EchoServer, FaultProxy

TOOLS = [{"type": "function", "function": {"name": "find", "description": "d",
                                           "parameters": {"type": "object", "properties": {}}}}]


def _sent(order: str | None) -> str:
    with EchoServer(200) as server:
        proxy = FaultProxy(server.url, lambda n, b: None)
        try:
            spec = ModelSpec(model="openai/stub", api_base=proxy.url + "/v1", body_order=order)
            client = ModelLayer({"model": spec}).client("model", "executor", Meter(), seed=626729)
            client.complete([{"role": "user", "content": "héllo \"x\""}], tools=TOOLS)
            with proxy.lock:
                return proxy.requests[-1]["raw"]
        finally:
            proxy.close()


def test_a_spec_asking_for_the_sdk_order_sends_it_and_the_values_are_the_same_bytes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000")
    ours, sdk = _sent(None), _sent(SDK_ORDER)
    assert [k for k, _ in members(ours)] == ["model", "messages", "temperature", "seed", "tools", "tool_choice"]
    # what litellm 1.82.6 (τ³'s pin) sends through the SDK, measured on the release's venv
    assert [k for k, _ in members(sdk)] == ["model", "messages", "seed", "temperature", "tool_choice", "tools"]
    assert dict(members(ours)) == dict(members(sdk)) and len(ours) == len(sdk)
    assert _sent(None) == ours  # a spec without it, after one with it: litellm's order again


def test_the_layout_moves_members_only():
    body = json.dumps({"model": "m", "zeta": 1, "messages": [{"a": "}"}], "tools": [], "seed": 2,
                       "stream": False}, separators=(",", ":")).encode()
    laid = sdk_layout(body)
    assert [k for k, _ in members(laid.decode())] == ["model", "stream", "messages", "seed", "tools", "zeta"]
    assert json.loads(laid) == json.loads(body) and len(laid) == len(body)
    assert sdk_layout(b'{"model": "m", "messages": []}') == b'{"model": "m", "messages": []}'  # not compact
    assert sdk_layout(b"not json") == b"not json"
