"""Threads against Ray (local, 2 workers) at 1 s model latency: throughput, memory, CPU.

Each run is a whole ``runtime.validate`` process playing one retail task ``waves × concurrency``
times (trials) against ``bench/stub_server.py`` (a loopback model server with a fixed latency;
every episode must score 1.0). The script watches the run folder's ``records.jsonl`` from
outside and samples the run's whole process tree (the driver and, with Ray, every Ray process):

* **steady ep/s** — episodes finished after the first wave, divided by the time they took (the
  first wave holds the start-up: imports, Ray's start, workers building their environments);
* **% of ideal** — steady ep/s against concurrency × the concurrency-1 threads rate;
* **peak RSS** — the largest sum of resident memory over the tree (shared pages count once per
  process, so Ray's figure is an upper bound);
* **CPU per episode** — user + system seconds of the whole tree in the steady window, divided by
  its episodes: the runtime's own cost outside the model (the model server is not in the tree).

    python bench/backends_scaling.py --concurrency 16 32 64 128 --waves 3 --write bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import ROOT, Stub, check_scored, machine, runtime_cmd, task_ids, write_block  # noqa: E402


def tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return []


def lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0


def measure(cmd: list[str], out: Path, first_wave: int, total: int) -> dict:
    """Run ``cmd`` and watch it: wall, first-wave and last-record times, peak tree RSS, CPU."""
    start = time.perf_counter()
    env = {**os.environ, "OPENAI_API_KEY": "bench-dummy", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    root = psutil.Process(proc.pid)
    cpu: dict[int, float] = {}
    at_wave: dict[int, float] | None = None
    t_wave = t_done = None
    peak = 0.0
    while proc.poll() is None:
        rss = 0.0
        for p in tree(root):
            try:
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
                rss += p.memory_info().rss
            except psutil.Error:
                continue
        peak = max(peak, rss)
        done = lines(out / "records.jsonl")
        now = time.perf_counter() - start
        if at_wave is None and done >= first_wave:
            at_wave, t_wave = dict(cpu), now
        if t_done is None and done >= total:
            t_done, at_done = now, dict(cpu)
        time.sleep(0.1)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"exited {proc.returncode}: {proc.stderr.read().decode(errors='replace')[-3000:]}")
    if t_done is None:
        t_done, at_done = wall, dict(cpu)
    steady_cpu = sum(v - at_wave.get(pid, 0.0) for pid, v in at_done.items())
    return {"wall": wall, "t_wave": t_wave, "t_done": t_done, "peak_mb": peak / 1024**2,
            "steady_eps": (total - first_wave) / max(1e-9, t_done - t_wave),
            "cpu_per_ep": steady_cpu / max(1, total - first_wave)}


def one(stub: Stub, backend: str, concurrency: int, waves: int, workers: int) -> dict:
    ids = task_ids("retail", 1)
    n = waves * concurrency
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        cmd = runtime_cmd(stub, "retail", ids, concurrency, out, trials=n)
        if backend == "ray":
            cmd += ["--backend", "ray", "--ray-workers", str(workers)]
        result = measure(cmd, out, concurrency, n)
        check_scored(out, n)
    result.update(backend=backend, concurrency=concurrency, episodes=n)
    print(result, file=sys.stderr, flush=True)
    return result


def table(args) -> str:
    with Stub(args.latency) as stub:
        base = one(stub, "threads", 1, max(args.waves, 4), args.workers)
        rows = [one(stub, b, c, args.waves, args.workers) for c in args.concurrency for b in args.backends]
    per = base["steady_eps"]
    out = [f"Model latency {args.latency:g} s per call; retail task 0 played waves × concurrency times "
           f"({args.waves} waves); Ray: a local instance with {args.workers} workers. Ideal = concurrency × "
           f"the concurrency-1 threads rate ({per:.3f} ep/s, {base['cpu_per_ep']:.3f} CPU-s an episode).",
           "",
           "| concurrency | backend | episodes | wall (s) | first wave done (s) | ep/s (steady) | ideal ep/s "
           "| % of ideal | peak RSS, whole tree (MB) | CPU per episode (s) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ideal = per * r["concurrency"]
        out.append(f"| {r['concurrency']} | {r['backend']} | {r['episodes']} | {r['wall']:.1f} | "
                   f"{r['t_wave']:.1f} | {r['steady_eps']:.2f} | {ideal:.2f} | "
                   f"**{100 * r['steady_eps'] / ideal:.0f}%** | {r['peak_mb']:.0f} | {r['cpu_per_ep']:.3f} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--backends", nargs="+", default=["threads", "ray"], choices=["threads", "ray"])
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--note", default="", help="a line printed under the table (e.g. machine load)")
    parser.add_argument("--write", type=Path, help="replace this benchmark's block in FILE")
    args = parser.parse_args()
    load = os.getloadavg()
    start = time.perf_counter()
    body = table(args)
    took = time.perf_counter() - start
    load_end = os.getloadavg()
    block = (f"### Threads against Ray\n\nMachine: {machine()}; load average {load[0]:.1f} at the start, "
             f"{load_end[0]:.1f} at the end. Command: `python bench/backends_scaling.py --latency "
             f"{args.latency:g} --waves {args.waves} --workers {args.workers} --concurrency "
             f"{' '.join(map(str, args.concurrency))}` ({took:.0f} s to measure).\n\n{body}"
             + (f"\n\n{args.note}" if args.note else ""))
    print(block, flush=True)
    if args.write:
        write_block(args.write, "backends", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
