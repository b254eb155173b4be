"""Runtime cost against τ²-bench's own runner, scaling with concurrency, and memory.

Both runners talk to the same scripted OpenAI-compatible server on loopback
(``bench/stub_server.py``, a fixed latency per call, replaying the reference solution), run the
same τ²-bench tasks with the same concurrency, and are timed as whole processes.

    python bench/runtime_vs_tau2.py anchor  --tasks 20 --concurrency 4 --latency 0 0.2
    python bench/runtime_vs_tau2.py scaling --tasks 64 --latency 1 --concurrency 1 4 16 32 64
    python bench/runtime_vs_tau2.py memory  --tasks 64 --latency 1 --concurrency 32

Each prints a Markdown table; bench/RESULTS.md holds the latest output.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _task_ids(domain: str, n: int) -> list[str]:
    from tau2.registry import registry

    ids = registry.get_task_splits_loader(domain)()["base"]
    tasks = {t.id: t for t in registry.get_tasks_loader(domain)()}
    return [i for i in ids if tasks[i].evaluation_criteria.actions][:n]


class Stub:
    def __init__(self, latency: float):
        self.port = _free_port()
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "stub_server.py"),
                                      "--port", str(self.port), "--latency", str(latency)],
                                     stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()  # "stub model on ..."
        self.base = f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "bench-dummy", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS in MB (ru_maxrss of the largest child so far)."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed:\n{proc.stderr[-2000:]}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def run_tau2(stub: Stub, domain: str, ids: list[str], concurrency: int) -> float:
    args = json.dumps({"api_base": stub.base, "temperature": 0.0})
    name = f"bench_{uuid.uuid4().hex[:8]}"
    cmd = [str(Path(sys.executable).with_name("tau2")), "run", "--domain", domain,
           "--agent-llm", "openai/stub", "--user-llm", "openai/stub",
           "--agent-llm-args", args, "--user-llm-args", args, "--task-ids", *ids,
           "--max-concurrency", str(concurrency), "--save-to", name, "--log-level", "ERROR"]
    try:
        return _timed(cmd)[0]
    finally:
        from tau2.utils import DATA_DIR

        for path in (DATA_DIR / "simulations").glob(f"{name}*"):
            path.unlink()


def run_runtime(stub: Stub, domain: str, ids: list[str], concurrency: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "runtime.validate", "--env", "tau2", "--mode", "direct",
               "--domain", domain, "--task-ids", ",".join(ids), "--model", "openai/stub",
               "--api-base", stub.base, "--concurrency", str(concurrency), "--no-cache",
               "--no-judge", "--out", out]
        wall, rss = _timed(cmd, cwd=ROOT)
        records = [json.loads(l) for l in Path(out, "records.jsonl").read_text().splitlines()]
        assert len(records) == len(ids) and all(r["score"] == 1.0 for r in records), \
            "the runtime's replay must score 1.0 on every task"
        return wall, rss


def anchor(args) -> None:
    print("| domain | latency | tasks | concurrency | tau2 run (s) | runtime (s) | tau2 ep/s | runtime ep/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for latency in args.latency:
        stub = Stub(latency)
        try:
            for domain in ("airline", "retail"):
                ids = _task_ids(domain, args.tasks)
                t_tau2 = run_tau2(stub, domain, ids, args.concurrency[0])
                t_rt, _ = run_runtime(stub, domain, ids, args.concurrency[0])
                print(f"| {domain} | {latency * 1000:.0f} ms | {len(ids)} | {args.concurrency[0]} | "
                      f"{t_tau2:.1f} | {t_rt:.1f} | {len(ids) / t_tau2:.2f} | {len(ids) / t_rt:.2f} | "
                      f"{t_tau2 / t_rt:.2f}× |", flush=True)
        finally:
            stub.close()


def scaling(args) -> None:
    stub = Stub(args.latency[0])
    try:
        ids = _task_ids("retail", args.tasks)
        base = None
        print("| concurrency | tasks | wall (s) | ep/s | ideal ep/s | % of ideal | peak RSS (MB) |")
        print("|---|---|---|---|---|---|---|")
        for c in args.concurrency:
            wall, rss = run_runtime(stub, "retail", ids, c)
            eps = len(ids) / wall
            base = base or eps / c
            print(f"| {c} | {len(ids)} | {wall:.1f} | {eps:.2f} | {base * c:.2f} | "
                  f"{100 * eps / (base * c):.0f}% | {rss} |", flush=True)
    finally:
        stub.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["anchor", "scaling"])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4])
    args = parser.parse_args()
    print(f"<!-- {args.what}: {os.cpu_count()} cores, python {sys.version.split()[0]} -->")
    {"anchor": anchor, "scaling": scaling}[args.what](args)


if __name__ == "__main__":
    main()
