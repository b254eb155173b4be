"""The Ray backend against the threads backend, on a local Ray instance with 2 workers.

Same command, same tasks: the records (minus timings and random tool-call ids) and scores must
be equal, ``p0`` made once per (task, trial) and shared across workers' modes, resumes reusing
what is on disk, the response cache (served by the driver) answering workers, the per-provider
model-call limit holding across workers (measured at the model server), and no Ray process left
after Ctrl-C or SIGKILL of the driver. Ray is started once for the module.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray backend tests need Ray: pip install -e '.[ray]'")
pytestmark = pytest.mark.ray  # one xdist worker for every test that starts Ray
psutil = pytest.importorskip("psutil", reason="the process checks need psutil")

from tests.conftest import calls_by_purpose, comparable, stub_server as load_stub_server

ROOT = Path(__file__).resolve().parents[1]
MOCK = ["--env", "tau2", "--domain", "mock", "--model", "scripted/roles"]
RAY = ["--backend", "ray", "--ray-workers", "2"]


@pytest.fixture(scope="module")
def local_ray():
    from runtime.backends import add_worker_setup, ray_backend
    from testkit import run_scripted

    run_scripted.register()
    add_worker_setup(functools.partial(run_scripted.register))
    with pytest.MonkeyPatch.context() as mp:
        # Workers read provider keys from their own environment; a local instance's workers
        # inherit the driver's as it was when Ray started (the stub needs a dummy one).
        mp.setenv("OPENAI_API_KEY", "test-dummy")
        ray_backend.start_local(2)
        yield
        ray_backend.stop_local()


def artifacts(run_dir: Path) -> dict[str, dict]:
    return {str(p.relative_to(run_dir)): json.loads(p.read_text())
            for p in sorted((run_dir / "artifacts").glob("*/*.json"))}


NICENESS = """
import os, ray
from runtime.backends import ray_backend
os.nice(3)
ray_backend.start_local(1)
@ray.remote
def niceness():
    return os.nice(0)
print(os.nice(0), ray.get(niceness.remote()))
ray_backend.stop_local()
"""


def test_the_workers_of_a_local_instance_run_at_the_drivers_priority():
    """Not Ray's default of 15 nicer: at that, two busy processes beside them on 2 cores starved
    the episode workers (and their head watch) for minutes."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"}
    done = subprocess.run([sys.executable, "-c", NICENESS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    driver, worker = map(int, done.stdout.split()[-2:])
    assert driver >= 3 and worker == driver, done.stdout


def test_ray_gives_the_threads_records(tmp_path, local_ray, validate):
    args = [*MOCK, "--mode", "all", "--tasks", "3", "--trials", "2", "--no-cache"]
    code_t, threads = validate(*args, out=tmp_path / "threads")
    code_r, on_ray = validate(*args, *RAY, out=tmp_path / "ray")
    assert code_t == code_r == 0
    assert len(threads) == len(on_ray) == 18
    assert comparable(on_ray) == comparable(threads)
    assert [r["score"] for r in on_ray if r["score"] == 1.0], "the gold replay must score"
    # p0 (and the opening request) made once per (task, trial) across all modes, as with threads
    assert calls_by_purpose(on_ray) == calls_by_purpose(threads)
    assert artifacts(tmp_path / "ray") == artifacts(tmp_path / "threads")


@pytest.mark.slow
def test_ray_runs_the_sealed_critique_as_threads_do(tmp_path, local_ray, validate):
    args = [*MOCK, "--mode", "refine", "--strategy", "sealed", "--tasks", "2", "--no-cache"]
    code_t, threads = validate(*args, out=tmp_path / "threads")
    code_r, on_ray = validate(*args, *RAY, out=tmp_path / "ray")
    assert code_t == code_r == 0 and len(on_ray) == 2
    assert comparable(on_ray) == comparable(threads)
    assert all(r["status"] == "ok" and r["channel"]["max_bits"] > r["channel"]["used_bits"] > 0 for r in on_ray)
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert summary["by_arm"]["refine:sealed"]["channel_critiques"] == 2


@pytest.mark.slow
def test_ray_resumes_a_threads_run_reusing_its_p0(tmp_path, local_ray, validate):
    out = tmp_path / "run"
    base = [*MOCK, "--tasks", "3", "--run-id", "resume", "--no-cache"]
    assert validate(*base, "--mode", "plan-first", out=out)[0] == 0
    code, rows = validate(*base, "--mode", "all", *RAY, out=out)
    assert code == 0 and len(rows) == 9
    new = [r for r in rows if r["key"]["mode"] != "plan-first"]
    assert calls_by_purpose(new)["planner"] == 0, "p0 on disk must be reused, not made again"
    assert all("p0" in r["reused"] for r in new if r["key"]["mode"] == "refine")
    _, fresh = validate(*base, "--mode", "all", out=tmp_path / "fresh")
    assert comparable(rows) == comparable(fresh)
    assert validate(*base, "--mode", "all", *RAY, out=out)[1] == rows, "a finished run resumes to nothing"


@pytest.mark.parametrize("address, says", [
    ("127.0.0.1:1", "nothing answers there"),
    ("no-port", "is not host:port"),
])
def test_a_bad_ray_address_exits_2_in_one_line(tmp_path, validate, capsys, address, says):
    out = tmp_path / "run"
    code, rows = validate(*MOCK, "--mode", "direct", "--tasks", "1", "--no-cache",
                          "--backend", "ray", "--ray-address", address, out=out)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and rows == []
    assert len(err) == 1 and says in err[0] and "accepted:" in err[0], err


# ---- through a real provider path: the loopback model server of the benchmarks -----------------------

@pytest.fixture(scope="module")
def stub():
    module = load_stub_server()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = module.serve(port, 0.3, ["retail"])
    yield f"http://127.0.0.1:{port}"
    server.shutdown()


def stats(base: str, reset: bool = False) -> dict:
    with urllib.request.urlopen(f"{base}/stats{'/reset' if reset else ''}", timeout=10) as r:
        return json.load(r)


def stub_args(base: str) -> list[str]:
    return ["--env", "tau2", "--domain", "retail", "--task-ids", "0", "--mode", "direct",
            "--model", "openai/stub", "--api-base", f"{base}/v1", "--no-judge"]


@pytest.mark.parametrize("backend", ["threads", pytest.param("ray", marks=pytest.mark.slow)])
def test_model_concurrency_limit_holds_across_workers(tmp_path, local_ray, stub, validate, backend,
                                                      monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-dummy")
    before = stats(stub, reset=True)
    code, rows = validate(*stub_args(stub), "--trials", "6", "--concurrency", "6",
                          "--model-concurrency", "2", "--no-cache", "--backend", backend,
                          "--ray-workers", "2")
    assert code == 0 and [r["score"] for r in rows] == [1.0] * 6
    after = stats(stub)
    assert after["chat"] > before["chat"]
    assert after["peak_in_flight"] == 2, after  # 6 episodes wanted 6 at once; the cap held at 2


@pytest.mark.slow
def test_response_cache_is_shared_by_ray_workers(tmp_path, local_ray, stub, validate, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-dummy")
    args = [*stub_args(stub), "--trials", "4", "--concurrency", "4", *RAY,
            "--cache-dir", str(tmp_path / "cache")]
    calls0 = stats(stub)["chat"]
    code, first = validate(*args, out=tmp_path / "first")
    calls1 = stats(stub)["chat"]
    code2, again = validate(*args, out=tmp_path / "again")
    assert code == code2 == 0 and calls1 > calls0
    assert stats(stub)["chat"] == calls1, "the second run must be answered from the cache"
    assert comparable(again) == comparable(first)
    assert sum(r["usage"]["total"]["cached_calls"] for r in again) == calls1 - calls0


# ---- no Ray process outlives its driver -------------------------------------------------------------

def start_driver(tmp_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "testkit.run_scripted", "--latency", "0.5", "--", *MOCK,
           "--mode", "direct", "--tasks", "4", "--trials", "3", "--concurrency", "2", *RAY,
           "--no-cache", "--out", str(tmp_path / "run")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("EVR_RAY_OWNER", None)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def descendants_once_workers_run(proc: subprocess.Popen, timeout_s: float = 180) -> list:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"driver exited early with {proc.returncode}"
        kids = psutil.Process(proc.pid).children(recursive=True)
        names = []
        for k in kids:
            try:
                names.append(" ".join(k.cmdline()))
            except psutil.Error:
                pass
        if sum("EpisodeWorker" in n for n in names) >= 2:
            time.sleep(3)  # episodes under way
            return psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.5)
    raise AssertionError("Ray workers never started")


def alive(procs: list, wait_s: float = 40) -> list:
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def describe(procs: list) -> list[str]:
    out = []
    for p in procs:
        try:
            out.append(f"{p.pid} {p.name()}")
        except psutil.Error:
            pass
    return out


@pytest.mark.slow  # the watcher's own SIGKILL tests (tests/test_ray_reaper.py) run by default
def test_sigkill_of_the_driver_leaves_no_ray_process(tmp_path):
    proc = start_driver(tmp_path)
    try:
        ray_procs = descendants_once_workers_run(proc)
        assert len(ray_procs) >= 4, describe(ray_procs)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        left = alive(ray_procs)
        assert not left, f"left behind: {describe(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
def test_ctrl_c_of_the_driver_exits_130_and_leaves_no_ray_process(tmp_path):
    proc = start_driver(tmp_path)
    try:
        ray_procs = descendants_once_workers_run(proc)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
        assert proc.wait(90) == 130
        left = alive(ray_procs)
        assert not left, f"left behind: {describe(left)}"
        lines = (tmp_path / "run" / "records.jsonl").read_text().splitlines() \
            if (tmp_path / "run" / "records.jsonl").exists() else []
        assert all(json.loads(line)["status"] in ("ok", "error") for line in lines if line.strip())
    finally:
        if proc.poll() is None:
            proc.kill()
