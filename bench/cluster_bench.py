"""A 2-node Ray cluster against threads at the same concurrency, and a node lost mid-run.

    python bench/cluster_bench.py [--tasks 3] [--trials 2] [--latency 0.3]

Starts a real cluster on this machine (``testkit.ray_cluster``: a head, a second node and a
spare, 1 CPU each, loopback, own ports), runs the same scripted τ² command (mock domain, all
three modes, scripted roles with ``--latency`` seconds per model reply, no cache) three times
as a user's command runs: threads (``--concurrency 2``), Ray with 2 workers on the cluster
(``--concurrency 2``), and Ray again with the worker node SIGKILLed once a few records exist.
Prints one Markdown row per run: episodes, wall time, episodes per minute, errors, duplicates,
and for the node loss the seconds from the kill to the worker restarted on the spare node and
to the first record written after it. Every cluster process is ended by pid at the end.
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

from testkit.ray_cluster import LocalCluster  # noqa: E402


def command(out: Path, args: list[str], latency: float, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "testkit.run_scripted", "--latency", str(latency), "--", *args,
            *extra, "--out", str(out)]


def env() -> dict[str, str]:
    e = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "RAY_AUTH_MODE": "disabled",
         "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    e.pop("EVR_RAY_OWNER", None)
    return e


def records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def row(name: str, out: Path, wall: float, note: str = "") -> str:
    rows = records(out)
    ids = [r["record_id"] for r in rows]
    errors = sum(r["status"] != "ok" for r in rows)
    return (f"| {name} | {len(rows)} | {wall:.1f} s | {len(rows) / wall * 60:.1f} | {errors} | "
            f"{len(ids) - len(set(ids))} | {note} |")


def timed(cmd: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - start


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", type=int, default=3)
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--latency", type=float, default=0.3)
    a = p.parse_args()
    args = ["--env", "tau2", "--domain", "mock", "--model", "scripted/roles", "--mode", "all",
            "--tasks", str(a.tasks), "--trials", str(a.trials), "--concurrency", "2", "--no-cache"]
    tmp = Path(tempfile.mkdtemp(prefix="evr-cluster-bench-"))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", file=sys.stderr)
    lines = ["| run | episodes | wall | episodes/min | errors | duplicates | node loss |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    wall = timed(command(tmp / "threads", args, a.latency, []))
    lines.append(row("threads, concurrency 2", tmp / "threads", wall))
    cluster = LocalCluster(root=tmp / "cluster", env={"OPENAI_API_KEY": "unused"})
    try:
        cluster.start_head()
        cluster.add_node("n2")
        ray = ["--backend", "ray", "--ray-address", cluster.address, "--ray-workers", "2"]
        wall = timed(command(tmp / "ray", args, a.latency, ray))
        lines.append(row("Ray, 2 nodes x 1 worker, concurrency 2", tmp / "ray", wall))

        cluster.add_node("spare")
        out = tmp / "ray-loss"
        start = time.monotonic()
        proc = subprocess.Popen(command(out, args, a.latency, ray), cwd=ROOT, env=env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while len(records(out)) < 3 and proc.poll() is None:
            time.sleep(0.2)
        before = len(records(out))
        while not (victims := [n for n in cluster.hosting("EpisodeWorker") if n != "head"]):
            time.sleep(0.2)  # the second worker is still being built
        before = len(records(out))
        killed = time.monotonic()
        cluster.kill_node(victims[0])
        replaced = record_after = None
        while proc.poll() is None:
            now = time.monotonic()
            if replaced is None and "spare" in cluster.hosting("EpisodeWorker"):
                replaced = now - killed
            if record_after is None and len(records(out)) > before:
                record_after = now - killed
            time.sleep(0.2)
        wall = time.monotonic() - start
        note = (f"{victims[0]} SIGKILLed after {before} records: worker restarted on the spare in "
                f"{replaced if replaced is None else f'{replaced:.1f} s'}, first record after "
                f"the kill in {record_after if record_after is None else f'{record_after:.1f} s'}; "
                f"exit {proc.returncode}")
        lines.append(row("Ray, 2 workers, a worker node lost (spare node)", out, wall, note))
    finally:
        cluster.stop()
    left = cluster.leftovers()
    print(f"load average after: {os.getloadavg()[0]:.1f}; Ray processes left: {len(left)}", file=sys.stderr)
    print("\n".join(lines))
    return 0 if not left else 1


if __name__ == "__main__":
    sys.exit(main())
