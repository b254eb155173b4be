"""Failing fast and honestly: rejected credentials, keyless local servers, dead and hanging
endpoints, the error-rate exit code, and malformed answers made visible and kept out of the
cache. Every endpoint is a loopback server (``testkit.loopback``)."""

from __future__ import annotations

import json
import sqlite3

import pytest

import runtime.llm.layer as layer_module
from runtime import validate
from runtime.llm.layer import Meter, ModelError, ModelLayer, ModelSpec, ResponseCache
from testkit.loopback import EchoServer, FaultProxy, agent_call
from tests.conftest import read_records, stub_server as load_stub_server

HELLO = [{"role": "user", "content": "hello"}]


class FastLayer(ModelLayer):
    """The real layer with a short backoff, so retries cost milliseconds in tests."""

    def __init__(self, specs, cache=None, **kwargs):
        kwargs.setdefault("backoff_s", 0.01)
        super().__init__(specs, cache=cache, **kwargs)


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(layer_module, "ModelLayer", FastLayer)


def _layer(url: str, model: str = "openai/m", **kwargs) -> ModelLayer:
    spec = ModelSpec(model=model, api_base=url, timeout=kwargs.pop("timeout", 30.0))
    return FastLayer({"model": spec}, **kwargs)


def _call(layer: ModelLayer):
    return layer.client("model", "executor", Meter()).complete(HELLO)


def _mock_run(url: str, out, *extra: str) -> int:
    """``validate`` on τ²'s mock domain (2 tasks unless ``--task-ids``/``--tasks`` is given)."""
    tasks = [] if {"--task-ids", "--tasks"} & set(extra) else ["--tasks", "2"]
    return validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", *tasks,
                          "--model", "openai/m", "--api-base", url, "--out", str(out),
                          "--concurrency", "1", *extra])


# -- credentials --------------------------------------------------------------------------------
def test_rejected_credentials_stop_the_run_after_one_call(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0000000000")
    with EchoServer(status=401) as server:
        code = _mock_run(server.url + "/v1", tmp_path / "run", "--no-cache")
        calls = len(server.requests)
    err = capsys.readouterr().err
    assert code == 2 and calls == 1
    assert [l for l in err.splitlines() if l.startswith("error:")] == [
        l for l in err.splitlines() if "authentication failed" in l]
    assert read_records(tmp_path / "run") == [], "episodes broken by bad credentials are left to resume"


def test_a_keyless_local_server_gets_a_placeholder_key_not_a_retried_failure(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with EchoServer(status=200) as server:
        reply = _call(_layer(server.url + "/v1"))
        (request,) = server.requests
    assert reply.content == "ok"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert headers["authorization"] == f"Bearer {layer_module.PLACEHOLDER_KEY}"


# -- dead and hanging endpoints ----------------------------------------------------------------
def test_a_dead_endpoint_trips_the_circuit_instead_of_retrying_every_episode(tmp_path, capsys):
    with EchoServer(status=200) as upstream, FaultProxy(upstream.url, lambda n, b: "reset") as dead:
        code = _mock_run(dead.url + "/v1", tmp_path / "run", "--no-cache", "--tasks", "4")
        attempts = len(dead.requests)
    err = capsys.readouterr().err
    assert code == 3 and "unreachable" in err and "connection failures in a row" in err
    # one call's retry budget at most (6 tries), not 6 tries for each of 4 episodes
    assert attempts <= 6, attempts
    assert read_records(tmp_path / "run") == []


def test_request_timeout_bounds_each_call():
    from runtime.compose.build import model_specs
    from runtime.compose.config import build

    specs, _ = model_specs(build({}, {"model": "openai/m", "request_timeout": 7.5}))
    assert {s.timeout for s in specs.values()} == {7.5}
    with EchoServer(status=200) as upstream, \
            FaultProxy(upstream.url, lambda n, b: "hang", hang_s=5) as hanging:
        with pytest.raises(ModelError, match="gave up after 2 tries"):
            _call(_layer(hanging.url + "/v1", timeout=0.5, retries=1))


# -- the exit code reflects errored episodes ---------------------------------------------------
def test_exit_code_is_3_when_every_episode_errored_or_the_share_is_above_the_limit(tmp_path, fast_retries, capsys):
    with EchoServer(status=400) as server:
        url = server.url + "/v1"
        assert _mock_run(url, tmp_path / "run", "--no-cache") == 3
        assert "2 of 2 episodes errored" in capsys.readouterr().err
        assert _mock_run(url, tmp_path / "run", "--no-cache", "--max-error-rate", "1") == 0
        assert _mock_run(url, tmp_path / "run", "--no-cache", "--max-error-rate", "0.5") == 3


# -- malformed answers ---------------------------------------------------------------------------
def _rows(path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT reply FROM replies")]


def test_a_response_without_choices_is_retried_and_never_cached(tmp_path):
    cache_path = tmp_path / "cache.sqlite"
    with EchoServer(status=200) as upstream:
        with FaultProxy(upstream.url, lambda n, b: "no_choices" if n == 0 else None) as proxy:
            reply = _call(_layer(proxy.url + "/v1", cache=ResponseCache(cache_path)))
            assert reply.content == "ok" and proxy.injected == ["no_choices"]
        assert [json.loads(r)["content"] for r in _rows(cache_path)] == ["ok"]
        with FaultProxy(upstream.url, lambda n, b: "no_choices") as broken:
            layer = _layer(broken.url + "/v1", cache=ResponseCache(tmp_path / "other.sqlite"), retries=2)
            with pytest.raises(ModelError, match="no choices"):
                _call(layer)
        assert _rows(tmp_path / "other.sqlite") == []


@pytest.fixture(scope="module")
def gold_stub():
    """``bench/stub_server.py``: replays τ²'s reference solution for agent and user."""
    stub = load_stub_server()
    # the tasks these tests play: mock tasks that share a user scenario cannot be told apart by it
    server = stub.serve(0, 0.0, ["mock"], ["create_task_1", "update_task_1", "impossible_task_1",
                                           "update_task_with_initialization_data"])
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _tool_call_turn(body: dict) -> bool:
    return agent_call(body) and not any(m.get("role") == "tool" for m in body["messages"])


def test_truncated_tool_call_arguments_are_counted_and_flagged(gold_stub, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    schedule = lambda n, body: "truncate_args" if _tool_call_turn(body) else None  # noqa: E731
    with FaultProxy(gold_stub, schedule) as proxy:
        code = _mock_run(proxy.url + "/v1", tmp_path / "run", "--no-cache", "--task-ids",
                         "update_task_with_initialization_data")
    assert code == 0 and "truncate_args" in proxy.injected
    (record,) = read_records(tmp_path / "run")
    assert record["status"] == "ok"
    assert "unparsable_tool_call" in record["flags"]
    assert record["malformed"]["executor"]["unparsable_tool_call"] >= 1


def test_retry_errors_bypasses_the_cache_for_the_retried_episode(gold_stub, tmp_path, monkeypatch, fast_retries):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    agent_calls = []

    def faulty(n, body):
        if not agent_call(body):
            return None
        agent_calls.append(n)
        return {1: "truncate_args", 2: "400"}.get(len(agent_calls))

    out, cache = tmp_path / "run", tmp_path / "cache"
    args = ["--task-ids", "update_task_with_initialization_data",
            "--cache-dir", str(cache), "--max-error-rate", "1"]
    with FaultProxy(gold_stub, faulty) as proxy:
        assert _mock_run(proxy.url + "/v1", out, *args) == 0
    (first,) = read_records(out)
    assert first["status"] == "error" and proxy.injected == ["truncate_args", "400"]
    with FaultProxy(gold_stub, lambda n, b: None) as healthy:
        # A new proxy is a new endpoint (port): a changed setting, allowed for this resume.
        assert _mock_run(healthy.url + "/v1", out, *args, "--retry-errors",
                         "--allow-changed-settings") == 0
        answered = len(healthy.requests)
    retried = read_records(out)[-1]
    assert retried["status"] == "ok" and retried["score"] == 1.0 and retried["flags"] == []
    usage = retried["usage"]["total"]
    assert usage["cached_calls"] == 0 and answered == usage["calls"]
