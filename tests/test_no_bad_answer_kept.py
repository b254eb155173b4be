"""No bad answer is kept: answers that failed validation never enter the response cache,
``--retry-errors`` re-runs ``ok`` records flagged with one, the summary counts them; the
breaker opens only on connection failures with no HTTP answer between them; error causes come
from one table (an HTTP 400 is the endpoint's, not ``internal``). Endpoints are loopback
servers (``testkit.loopback``) in front of the gold-replaying stub."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from runtime import validate
from runtime.episode.failures import CAUSES, error_cause, error_kind
from runtime.llm.breaker import CircuitBreaker
from runtime.llm.layer import Meter, ModelError, ModelLayer, ModelSpec, ResponseCache
from testkit.loopback import EchoServer, FaultProxy, agent_call
from tests.conftest import read_records, stub_server as load_stub_server

HELLO = [{"role": "user", "content": "hello"}]
TASK = "update_task_with_initialization_data"


@pytest.fixture(scope="module")
def gold_stub():
    """``bench/stub_server.py``: replays τ²'s reference solution for agent and user."""
    stub = load_stub_server()
    # the tasks these tests play: mock tasks that share a user scenario cannot be told apart by it
    server = stub.serve(0, 0.0, ["mock"], [TASK, "create_task_1"])
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _layer(url: str, **kwargs) -> ModelLayer:
    spec = ModelSpec(model="openai/m", api_base=url, timeout=10.0)
    return ModelLayer({"model": spec}, backoff_s=0.001, max_backoff_s=0.001, **kwargs)


def _run(url: str, out: Path, *extra: str) -> int:
    return validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", TASK,
                          "--model", "openai/m", "--api-base", url, "--out", str(out),
                          "--concurrency", "1", *extra])


def _cached_replies(path: Path) -> list[dict]:
    with sqlite3.connect(path) as db:
        return [json.loads(r[0]) for r in db.execute("SELECT reply FROM replies")]


def _first_tool_call_turn(body: dict) -> bool:
    return agent_call(body) and not any(m.get("role") == "tool" for m in body["messages"])


# -- the breaker ----------------------------------------------------------------------------------
def test_a_flaky_endpoint_that_keeps_answering_is_not_called_unreachable(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    faults = ["reset", "429", "reset", "garbage", "reset", "500", "reset", "429", "reset", "400"]
    with EchoServer(status=200) as upstream, FaultProxy(upstream.url, lambda n, b: faults[n]) as proxy:
        layer = _layer(proxy.url + "/v1", retries=9, breaker=CircuitBreaker(failures=4, min_span_s=0))
        with pytest.raises(ModelError) as caught:
            layer.client("model", "executor", Meter()).complete(HELLO)
    assert layer.aborted is None, layer.aborted  # five resets, but an HTTP answer between each
    assert "unreachable" not in str(caught.value) and len(proxy.injected) == 10


def test_the_breaker_opens_on_consecutive_connection_failures_and_says_what_it_saw():
    breaker = CircuitBreaker(failures=3, min_span_s=0)
    assert not breaker.failure("e", "Connection refused") and not breaker.failure("e", "reset")
    breaker.answered("e")  # a 429: the server is there
    assert not breaker.failure("e", "reset") and not breaker.failure("e", "reset")
    assert breaker.failure("e", "reset")
    reason = breaker.open_reason("e")
    assert "3 connection failures in a row with no HTTP answer between them" in reason
    assert "3× reset" in reason


# -- error causes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fault,cause", [("400", "http_4xx"), ("429", "http_4xx"), ("500", "http_5xx"),
                                         ("reset", "connection"), ("garbage", "bad_response")])
def test_error_causes_follow_the_table(monkeypatch, fault, cause):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    with EchoServer(status=200) as upstream, FaultProxy(upstream.url, lambda n, b: fault) as proxy:
        with pytest.raises(ModelError) as caught:
            _layer(proxy.url + "/v1", retries=0).client("model", "executor", Meter()).complete(HELLO)
    assert error_cause(caught.value) == cause
    assert error_kind(caught.value) == CAUSES[cause][0] == "infrastructure"


def test_an_http_400_episode_is_counted_as_infrastructure(gold_stub, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    with FaultProxy(gold_stub, lambda n, b: "400" if agent_call(b) else None) as proxy:
        assert _run(proxy.url + "/v1", tmp_path / "run", "--no-cache", "--max-error-rate", "1") == 0
    (record,) = read_records(tmp_path / "run")
    assert record["status"] == "error"
    assert (record["error"]["kind"], record["error"]["cause"]) == ("infrastructure", "http_4xx")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["by_arm"]["direct"]["infrastructure_errors"] == 1
    assert summary["by_arm"]["direct"]["error_causes"] == {"http_4xx": 1}


# -- the cache and --retry-errors -----------------------------------------------------------------
def test_a_malformed_answer_is_never_cached_and_retry_errors_reruns_its_flagged_record(
        gold_stub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    cache = tmp_path / "cache"
    schedule = lambda n, body: "truncate_args" if _first_tool_call_turn(body) else None  # noqa: E731
    with FaultProxy(gold_stub, schedule) as proxy:
        assert _run(proxy.url + "/v1", tmp_path / "run", "--cache-dir", str(cache)) == 0
    (first,) = read_records(tmp_path / "run")
    assert first["status"] == "ok" and "unparsable_tool_call" in first["flags"]
    for reply in _cached_replies(cache / "responses.sqlite"):
        for call in reply["tool_calls"]:
            assert isinstance(json.loads(call["function"]["arguments"] or "{}"), dict)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["by_arm"]["direct"]["flagged"] == 1
    assert "1 scored episode(s) rest on an answer that failed validation" in " ".join(
        capsys.readouterr().out.split())

    # A fresh folder on the same cache, faults gone: the bad answer is asked for again.
    with FaultProxy(gold_stub, lambda n, b: None) as healthy:
        assert _run(healthy.url + "/v1", tmp_path / "fresh", "--cache-dir", str(cache)) == 0
        assert len(healthy.requests) >= 1
    (fresh,) = read_records(tmp_path / "fresh")
    assert fresh["score"] == 1.0 and fresh["flags"] == []

    # --retry-errors re-runs the flagged ok record, cache bypassed (the proxy's port is new: the
    # endpoint changed, so the folder's settings did too).
    with FaultProxy(gold_stub, lambda n, b: None) as healthy:
        assert _run(healthy.url + "/v1", tmp_path / "run", "--cache-dir", str(cache),
                    "--retry-errors", "--allow-changed-settings") == 0
        answered = len(healthy.requests)
    retried = read_records(tmp_path / "run")[-1]
    assert len(read_records(tmp_path / "run")) == 2
    assert retried["status"] == "ok" and retried["score"] == 1.0 and retried["flags"] == []
    assert retried["usage"]["total"]["cached_calls"] == 0 and answered == retried["usage"]["total"]["calls"]


def test_a_cached_reply_without_json_is_not_replayed_for_a_json_request(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    cache = ResponseCache(tmp_path / "c.sqlite")
    with EchoServer(status=200) as upstream:
        layer = _layer(upstream.url + "/v1", cache=cache)
        client = layer.client("model", "planner", Meter())
        client.complete(HELLO, json_schema={"type": "object"})  # the echo server's "ok": no JSON
        assert _cached_replies(tmp_path / "c.sqlite") == []
        meter = Meter()
        layer.client("model", "planner", meter).complete(HELLO, json_schema={"type": "object"})
    assert meter.as_dict()["total"]["cached_calls"] == 0
