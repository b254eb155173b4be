"""Losing the Ray head mid-run: the calls the endpoint received against the calls the run folder
accounts for, and the calls that reached the endpoint after the command had returned.

    python bench/ray_head_loss.py [--runs 1] [--watch 20]

Starts a real 2-node cluster on this machine (``testkit.ray_cluster``: a head and a second
node, 1 CPU each, loopback, own ports, Ray's own settings otherwise: the second node's raylet
gives up on a lost GCS after Ray's default 60 s) and the counting stub endpoint
(``bench/stub_server.py``, 0.5 s a reply). Runs ``validate`` on it (τ² retail task 0, Direct,
6 trials, 2 workers, no cache) as a user's command runs, SIGKILLs every process of the head
once both workers are in mid-episode, then watches the endpoint for ``--watch`` seconds after
the command returned. Prints one Markdown row per run: the exit code, the calls the endpoint
received before the command returned, the calls the folder accounts for (records, plus the
lost attempts' calls and calls in flight in ``lost_attempts.jsonl``; "≥" where the folder says
its count is a lower bound), the calls after the command returned and the last one's delay.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from testkit.ray_cluster import LocalCluster  # noqa: E402


def stub_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("stub_server", ROOT / "bench" / "stub_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def env() -> dict[str, str]:
    e = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RAY_AUTH_MODE": "disabled",
         "OPENAI_API_KEY": "test-dummy",
         "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    e.pop("EVR_RAY_OWNER", None)
    return e


def folder_counts(out: Path) -> tuple[int, bool]:
    """(calls the folder accounts for, whether it says that is a lower bound)."""
    rows = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines() if x.strip()] \
        if (out / "records.jsonl").exists() else []
    lost_file = out / "lost_attempts.jsonl"
    lost = [json.loads(x)["attempt"] for x in lost_file.read_text().splitlines() if x.strip()] \
        if lost_file.exists() else []
    calls = sum(r["usage"]["total"]["calls"] for r in rows) + sum(a["calls"] + a.get("in_flight_calls", 0)
                                                                 for a in lost)
    return calls, any(a.get("at_least") for a in lost)


def one_run(watch_s: float) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="evr-head-loss-"))
    stub = stub_module()
    server = stub.serve(0, 0.5, ["retail"])
    base = f"http://127.0.0.1:{server.server_address[1]}"
    cluster = LocalCluster(root=tmp / "cluster", env={"OPENAI_API_KEY": "test-dummy"})
    try:
        cluster.start_head()
        cluster.add_node("n2")
        out = tmp / "run"
        cmd = [sys.executable, "-m", "runtime.validate", "--env", "tau2", "--domain", "retail",
               "--task-ids", "0", "--mode", "direct", "--model", "openai/stub", "--api-base", f"{base}/v1",
               "--no-judge", "--trials", "6", "--concurrency", "2", "--ray-workers", "2", "--no-cache",
               "--price", "openai/stub=1000/5000", "--backend", "ray", "--ray-address", cluster.address,
               "--out", str(out)]
        calls0 = stub.stats(base)["chat"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 300
        while not (stub.both_calling(base, calls0) and "n2" in cluster.hosting("EpisodeWorker")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the run did not get going: {proc.communicate()[1][-1000:]}")
            time.sleep(0.2)
        killed = time.time()
        cluster.kill_node("head")
        _, err = proc.communicate(timeout=300)
        returned = time.time()
        at_return = stub.stats(base)
        time.sleep(watch_s)
        after = stub.stats(base)
        left = cluster.hosting("EpisodeWorker")
    finally:
        cluster.stop()
        server.shutdown()
    received = at_return["chat"] - calls0
    counted, at_least = folder_counts(out)
    late = after["chat"] - at_return["chat"]
    last = after["last_call_at"] - returned if late else None
    line = (err.strip().splitlines() or [""])[-1]
    line = line.split("gone); ", 1)[-1].split("; finished records")[0]  # what it says of the calls
    return (f"| {proc.returncode} | {returned - killed:.1f} s | {received} | {'≥ ' if at_least else ''}{counted} | "
            f"{late} | {'' if last is None else f'{last:.1f} s'} | {'yes' if left else 'no'} | "
            f"{line[:200].replace('|', '/')} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--watch", type=float, default=20.0, help="seconds the endpoint is watched after the end")
    args = parser.parse_args()
    print("| exit | kill → return | endpoint calls | folder accounts for | calls after return | "
          "last one after return | a worker left | the stop line, after the head's address |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for _ in range(args.runs):
        print(one_run(args.watch), flush=True)


if __name__ == "__main__":
    main()
