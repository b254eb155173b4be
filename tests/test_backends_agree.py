"""Threads and Ray run the same experiment: for each flag that changes what a run does, the same
command on both backends (Ray: a local instance, 2 workers) gives the same records (apart from
timings and call ids), the same model calls per purpose, the same exit code and the same
resumable state (records and shared artifacts on disk).

The default suite runs the cases where the backends once differed (a stop on rejected
credentials or on an endpoint dying mid-run; ``--retry-errors`` bypassing the cache); the rest of
the flag matrix, ``--no-auditor`` and its control included, is ``slow``. Ray is started once for
the module.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray backend tests need Ray: pip install -e '.[ray]'")
pytestmark = pytest.mark.ray  # one xdist worker for every test that starts Ray

from testkit.loopback import EchoServer, FaultProxy, agent_call
from tests.conftest import calls_by_purpose, comparable, read_records, stub_server as load_stub_server

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = ["--env", "tau2", "--domain", "mock", "--model", "scripted/roles", "--tasks", "2"]
TASKS = "update_task_with_initialization_data,create_task_1"


@pytest.fixture(scope="module")
def local_ray():
    from runtime.backends import ray_backend
    from testkit import run_scripted

    run_scripted.register()
    with pytest.MonkeyPatch.context() as mp:
        # A local instance's workers inherit the driver's environment as it is when Ray starts.
        mp.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
        ray_backend.start_local(2)
        yield
        ray_backend.stop_local()


@pytest.fixture
def worker_roles(monkeypatch):
    """``worker_roles(**options)``: the scripted roles registered here and in every Ray worker."""
    from runtime import backends
    from testkit import run_scripted

    def register(**options):
        run_scripted.register(**options)
        monkeypatch.setattr(backends, "WORKER_SETUP", [functools.partial(run_scripted.register, **options)])

    register()
    yield register
    run_scripted.register()


@pytest.fixture(scope="module")
def gold_stub():
    """``bench/stub_server.py``: replays τ²'s reference solution for agent and user."""
    stub = load_stub_server()
    # the tasks these tests play: mock tasks that share a user scenario cannot be told apart by it
    server = stub.serve(0, 0.0, ["mock"], ["create_task_1", "update_task_1", "impossible_task_1",
                                           "update_task_with_initialization_data"])
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run(out: Path, *args: str, backend: str, command: str = "validate") -> int:
    from runtime import ablate, validate

    main = ablate.main if command == "ablate" else validate.main
    extra = ["--backend", backend, "--ray-workers", "2"] if backend == "ray" else []
    return main([*args, *extra, "--out", str(out)])


def state(out: Path) -> dict:
    """What a resumed run starts from: the records and the shared artifacts on disk."""
    artifacts = {str(p.relative_to(out)): json.loads(p.read_text())
                 for p in sorted(out.glob("artifacts/*/*.json"))}
    rows = read_records(out)
    return {"records": comparable(rows), "statuses": sorted((r["record_id"], r["status"]) for r in rows),
            "artifacts": json.loads(re.sub(r"call_[0-9a-f]{12}", "call_X", json.dumps(artifacts)))}


def assert_same(tmp_path: Path, *args: str, command: str = "validate", expect: int = 0,
                before=None) -> dict:
    """The same command on threads and on Ray; ``before(out, backend)`` prepares each folder."""
    seen = {}
    for backend in ("threads", "ray"):
        out = tmp_path / backend
        if before:
            before(out, backend)
        code = run(out, *args, backend=backend, command=command)
        rows = read_records(out)
        seen[backend] = {"code": code, "calls": calls_by_purpose(rows), **state(out)}
    assert seen["threads"]["code"] == expect, seen["threads"]["code"]
    assert seen["ray"] == seen["threads"]
    return seen["threads"]


# ---- the divergences that once were: each failed on Ray -----------------------------------------

@pytest.mark.slow
def test_rejected_credentials_record_nothing_on_either_backend(tmp_path, local_ray, capsys):
    with EchoServer(status=401) as server:
        result = assert_same(tmp_path, "--env", "tau2", "--domain", "mock", "--mode", "direct",
                             "--tasks", "2", "--model", "openai/m", "--api-base", server.url + "/v1",
                             "--no-cache", "--concurrency", "1", expect=2)
    assert result["records"] == {}, "episodes broken by bad credentials are left to resume"
    assert capsys.readouterr().err.count("authentication failed") == 2


def _healthy_calls(gold_stub: str, tmp_path: Path, *args: str) -> int:
    with FaultProxy(gold_stub, lambda n, b: None) as proxy:
        assert run(tmp_path / "count", *args, "--api-base", proxy.url + "/v1", backend="threads") == 0
        return len(proxy.requests)


@pytest.mark.slow
def test_an_endpoint_dying_mid_run_stops_both_backends_alike(gold_stub, tmp_path, local_ray):
    base = ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--model", "openai/m",
            "--no-cache", "--concurrency", "1"]
    first = TASKS.split(",")[0]
    alive_for = _healthy_calls(gold_stub, tmp_path, *base, "--task-ids", first)

    def dies_after_the_first_episode(out: Path, backend: str) -> None:
        proxies.append(FaultProxy(gold_stub, lambda n, b: "reset" if n >= alive_for else None))
        args[:] = [*base, "--task-ids", TASKS, "--api-base", proxies[-1].url + "/v1"]

    proxies: list[FaultProxy] = []
    args: list[str] = []
    seen = {}
    try:
        for backend in ("threads", "ray"):
            out = tmp_path / backend
            dies_after_the_first_episode(out, backend)
            seen[backend] = {"code": run(out, *args, backend=backend), **state(out)}
    finally:
        for proxy in proxies:
            proxy.close()
    assert seen["threads"]["code"] == 3
    assert seen["threads"]["statuses"] == [(f"tau2|mock|{first}|direct|openai/m|0", "ok")]
    assert seen["ray"] == seen["threads"]


@pytest.mark.slow  # --no-auditor on threads: tests/test_modes_and_boundary.py
def test_no_auditor_makes_no_auditor_calls_on_either_backend(tmp_path, local_ray, worker_roles):
    result = assert_same(tmp_path, *SCRIPTED, "--mode", "refine", "--no-cache", "--no-auditor")
    assert result["calls"]["auditor"] == 0 and result["calls"]["critic"] == 2
    assert [r["guard"]["audited"] for r in result["records"].values()] == [False, False]


@pytest.mark.slow
def test_the_auditor_runs_by_default_on_both_backends(tmp_path, local_ray, worker_roles):
    """The control of the test above: without ``--no-auditor`` the auditor is called."""
    result = assert_same(tmp_path, *SCRIPTED, "--mode", "refine", "--no-cache")
    assert result["calls"]["auditor"] == 2
    assert [r["guard"]["audited"] for r in result["records"].values()] == [True, True]


@pytest.mark.slow
def test_retry_errors_bypasses_the_cache_on_both_backends(gold_stub, tmp_path, local_ray):
    base = ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--model", "openai/m",
            "--task-ids", "update_task_with_initialization_data", "--max-error-rate", "1",
            "--concurrency", "1", "--cache-dir"]

    # One endpoint (one api_base) for both runs: the cache key holds the whole request, so a
    # retry through another address would miss the cache whether it bypassed it or not.
    faulting = {"on": True}

    def faulty(n, body):
        if not faulting["on"] or not agent_call(body):
            return None
        agent_calls.append(n)  # the first run's agent: a truncated tool call (never cached), then a 400
        return {1: "truncate_args", 2: "400"}.get(len(agent_calls))

    seen = {}
    for backend in ("threads", "ray"):
        out, agent_calls = tmp_path / backend, []
        faulting["on"] = True
        with FaultProxy(gold_stub, faulty) as proxy:
            args = [*base, str(out / "cache"), "--api-base", proxy.url + "/v1"]
            assert run(out, *args, backend=backend) == 0
            first = read_records(out)
            assert [r["status"] for r in first] == ["error"]
            assert first[0]["usage"]["total"]["calls"] >= 2, "an answer cached before the error, or this proves nothing"
            faulting["on"], asked_before = False, len(proxy.requests)
            code = run(out, *args, "--retry-errors", backend=backend)
            retried = read_records(out)[-1]
            seen[backend] = {"code": code, "score": retried["score"], "flags": retried["flags"],
                             "cached": retried["usage"]["total"]["cached_calls"],
                             "answered": len(proxy.requests) - asked_before == retried["usage"]["total"]["calls"]}
    assert seen["threads"] == {"code": 0, "score": 1.0, "flags": [], "cached": 0, "answered": True}
    assert seen["ray"] == seen["threads"]


# ---- the rest of the flag matrix ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("flags", [
    ["--mode", "all", "--no-judge"],
    ["--mode", "all", "--judge"],
    ["--mode", "plan-first", "--max-steps", "4"],
    ["--mode", "all", "--planner", "tests.apb_format_planner:ApbFormatPlanner"],
], ids=["no-judge", "judge", "max-steps", "planner"])
def test_scripted_flags_agree(tmp_path, local_ray, worker_roles, flags):
    result = assert_same(tmp_path, *SCRIPTED, "--no-cache", *flags)
    assert result["records"] and all(r["status"] == "ok" for r in result["records"].values())
    judged = [r["judge_p0"] is not None for r in result["records"].values() if r["key"]["mode"] != "direct"]
    assert all(judged) == ("--no-judge" not in flags)


@pytest.mark.slow
def test_ablate_strategies_agree(tmp_path, local_ray, worker_roles):
    result = assert_same(tmp_path, *SCRIPTED, "--no-cache", "--strategies", "anti-leak,none",
                         command="ablate")
    strategies = Counter(r["key"]["strategy"] for r in result["records"].values())
    assert strategies == {"": 2, "anti-leak": 2, "none": 2}


@pytest.mark.slow
def test_disguised_critic_agrees(tmp_path, local_ray, worker_roles):
    worker_roles(disguised=True)
    result = assert_same(tmp_path, "--env", "tau2", "--domain", "mock", "--tasks", "2",
                         "--model", "scripted/plan-follower", "--mode", "refine", "--no-cache")
    assert all(r["critique"] for r in result["records"].values())


@pytest.mark.slow
def test_a_dead_endpoint_records_nothing_on_either_backend(tmp_path, local_ray):
    with EchoServer(status=200) as upstream, FaultProxy(upstream.url, lambda n, b: "reset") as dead:
        result = assert_same(tmp_path, "--env", "tau2", "--domain", "mock", "--mode", "direct",
                             "--tasks", "2", "--model", "openai/m", "--api-base", dead.url + "/v1",
                             "--no-cache", "--concurrency", "1", expect=3)
    assert result["records"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("limit, expect", [("1", 0), ("0.5", 3)])
def test_max_error_rate_agrees(gold_stub, tmp_path, local_ray, limit, expect):
    with FaultProxy(gold_stub, lambda n, b: "400" if agent_call(b) else None) as broken:
        result = assert_same(tmp_path, "--env", "tau2", "--domain", "mock", "--mode", "direct",
                             "--task-ids", TASKS, "--model", "openai/m", "--api-base", broken.url + "/v1",
                             "--no-cache", "--concurrency", "1", "--max-error-rate", limit, expect=expect)
    assert [s for _, s in result["statuses"]] == ["error", "error"]
