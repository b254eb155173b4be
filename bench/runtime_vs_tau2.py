"""Runtime cost against τ²-bench's own runner, scaling with concurrency, memory, overheads.

Every run talks to the same scripted OpenAI-compatible server on loopback
(``bench/stub_server.py``: a fixed latency per call, replaying the reference solution for agent
and user alike), so the model costs the same to both runners and every episode must score 1.0
(checked: a faster runner that does less work would not count). Runs are whole processes, timed
from start to exit, their peak RSS read from ``wait4``.

    python bench/runtime_vs_tau2.py anchor   --tasks 30 --concurrency 4 --latency 0 0.2
    python bench/runtime_vs_tau2.py scaling  --latency 1 --concurrency 1 4 16 32 64
    python bench/runtime_vs_tau2.py startup  --runs 7   # bench/cli_startup.py's block
    python bench/runtime_vs_tau2.py overhead --tasks 20
    python bench/runtime_vs_tau2.py embedded
    python bench/runtime_vs_tau2.py all --write bench/RESULTS.md   # what `make bench` runs

Each prints Markdown; ``--write FILE`` replaces that part's block (between its markers) in FILE.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import (  # noqa: E402
    IMPORTS_ONLY, Stub, check_scored, machine, replace_between, run_runtime, run_tau2, runtime_cmd,
    task_ids, timed, write_block,
)


# ---- the measurements ----------------------------------------------------------------------------


def import_floor(runs: int = 3) -> float:
    """Median wall seconds of :data:`IMPORTS_ONLY`: no runner that imports the same libraries
    can finish faster than this."""
    return statistics.median(timed(IMPORTS_ONLY)[0] for _ in range(runs))


def anchor(args) -> str:
    """Episodes per second of ``tau2 run`` and of ``runtime.validate --mode direct``, beside the
    import floor measured in the same run (the bound on the ratio: ``tau2 run``'s time over the
    imports the runtime shares with it)."""
    lines = ["| domain | latency | episodes | concurrency | `tau2 run` (s) | runtime (s) | runtime, DB cache off (s) "
             "| `tau2 run` ep/s | runtime ep/s | runtime ÷ `tau2 run` | CPU s: `tau2 run` / runtime | CPU ratio "
             "| runtime with its report (s) | ratio with the report | imports alone (s) "
             "| bound: `tau2 run` ÷ imports |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    c = args.concurrency[0]
    for latency in args.latency:
        with Stub(latency) as stub:
            for domain in ("airline", "retail"):
                ids = task_ids(domain, args.tasks)
                t_tau2, cpu_tau2 = run_tau2(stub, domain, ids, c)
                t_rt, _, cpu_rt = run_runtime(stub, domain, ids, c)
                t_off, _, _ = run_runtime(stub, domain, ids, c, env={"EVR_TAU2_DB_CACHE": "0"})
                t_rep, _, _ = run_runtime(stub, domain, ids, c, report=True)
                floor = import_floor()
                n = len(ids)
                lines.append(f"| {domain} | {latency * 1000:.0f} ms | {n} | {c} | {t_tau2:.1f} | {t_rt:.1f} | "
                             f"{t_off:.1f} | {n / t_tau2:.2f} | {n / t_rt:.2f} | **{t_tau2 / t_rt:.2f}×** | "
                             f"{cpu_tau2:.1f} / {cpu_rt:.1f} | {cpu_tau2 / cpu_rt:.2f}× | {t_rep:.1f} | "
                             f"{t_tau2 / t_rep:.2f}× | {floor:.1f} | {t_tau2 / floor:.2f}× |")
                print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def scaling(args) -> str:
    """One retail task played ``waves × concurrency`` times (trials), at each concurrency.

    Every concurrency plays the same number of waves, so the one-off costs inside a run (the
    first model call's lazy imports, the DB parse) weigh the same in each; the fixed start and
    end of the process are measured by running the same command again on its finished folder
    (every record done, nothing to play) and left out of the steady throughput."""
    latency, waves = args.latency[0], args.waves
    ids = task_ids("retail", 1)
    rows, base = [], None
    with Stub(latency) as stub:
        for c in args.concurrency:
            n = waves * c
            with tempfile.TemporaryDirectory() as out:
                cmd = runtime_cmd(stub, "retail", ids, c, Path(out), trials=n)
                wall, rss = timed(cmd)
                check_scored(Path(out), n)
                fixed, _ = timed(cmd)  # resume of a finished folder: start-up and shut-down only
            steady = n / max(1e-9, wall - fixed)
            base = base or steady / c
            rows.append((c, n, wall, fixed, n / wall, steady, base * c, rss))
            print(rows[-1], file=sys.stderr, flush=True)
    lines = [f"Model latency {latency:g} s per call; retail task {ids[0]} "
             f"({len(_actions('retail', ids[0]))} reference actions), played {waves} × concurrency times.",
             "",
             "| concurrency | episodes | wall (s) | fixed start/end (s) | ep/s (wall) | ep/s (steady) "
             "| ideal ep/s | % of ideal | peak RSS (MB) | RSS per concurrent episode (MB) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rss1 = rows[0][-1]
    for c, n, wall, fixed, eps, steady, ideal, rss in rows:
        per = "–" if c == 1 else f"{(rss - rss1) / (c - 1):.1f} marginal, {rss / c:.1f} whole"
        lines.append(f"| {c} | {n} | {wall:.1f} | {fixed:.1f} | {eps:.2f} | {steady:.2f} | {ideal:.2f} | "
                     f"**{100 * steady / ideal:.0f}%** | {rss:.0f} | {per} |")
    return "\n".join(lines)


def _actions(domain: str, task_id: str) -> list:
    from tau2.registry import registry

    task = next(t for t in registry.get_tasks_loader(domain)() if t.id == task_id)
    return task.evaluation_criteria.actions or []


def overhead(args) -> str:
    """Where an episode's time goes (concurrency 1, 0 ms model), and re-runs from the cache."""
    ids = task_ids("airline", args.tasks)
    out_lines = []
    with Stub(0.0) as stub, tempfile.TemporaryDirectory() as tmp:
        first, again = Path(tmp, "first"), Path(tmp, "again")
        calls0 = stub.calls()
        cache = Path(tmp, "cache")
        wall1, _ = timed(runtime_cmd(stub, "airline", ids, 1, first, cache=cache))
        rows = check_scored(first, len(ids))
        calls1 = stub.calls()
        wall2, _ = timed(runtime_cmd(stub, "airline", ids, 1, again, cache=cache))
        check_scored(again, len(ids))
        calls2 = stub.calls()
        wall3, _ = timed(runtime_cmd(stub, "airline", ids, 1, first, cache=cache))  # all done
        calls3 = stub.calls()

    def mean(values) -> float:
        return statistics.fmean(values) if values else 0.0

    prepare = mean([r["timings_s"]["prepare"] for r in rows])
    execute = mean([r["timings_s"]["execute"] for r in rows])
    score = mean([r["timings_s"]["score"] for r in rows])
    model = mean([r["usage"]["total"]["seconds"] for r in rows])
    calls = mean([r["usage"]["total"]["calls"] for r in rows])
    n = len(ids)
    out_lines += [
        f"Airline, {n} tasks, concurrency 1, stub model at 0 ms; means per episode from the records' "
        "`timings_s` and `usage`.",
        "",
        "| part of an episode | seconds |", "|---|---|",
        f"| model calls ({calls:.1f} a episode, through litellm to the stub and back) | {model:.3f} |",
        f"| scoring (τ²'s `evaluate_simulation`: replays, DB hashes, action checks) | {score:.3f} |",
        f"| everything else: τ²'s orchestrator, its tool calls, the runtime (graph, records) | "
        f"{prepare + execute - model:.3f} |",
        f"| **whole episode** | {prepare + execute + score:.3f} |",
        "",
        "The last row is the process's fixed start and end; \"steady\" leaves it out.",
        "",
        "| re-run | wall (s) | model calls | episodes/s (wall) | episodes/s (steady) |",
        "|---|---|---|---|---|",
        f"| first run, response cache empty | {wall1:.1f} | {calls1 - calls0} | {n / wall1:.2f} | "
        f"{n / max(1e-9, wall1 - wall3):.1f} |",
        f"| same matrix into a new folder, every answer from the response cache | {wall2:.1f} | "
        f"{calls2 - calls1} | {n / wall2:.2f} | {n / max(1e-9, wall2 - wall3):.1f} |",
        f"| same command on the finished folder (every record done: resumes to nothing) | {wall3:.1f} | "
        f"{calls3 - calls2} | – | – |",
    ]
    if calls2 - calls1 != 0 or calls3 - calls2 != 0:
        raise RuntimeError("a cached re-run called the model")
    return "\n".join(out_lines)


def startup(args) -> str:
    """How fast the commands answer and the fixed start (``bench/cli_startup.py``), measured in
    the same run as the anchor so the two blocks share one machine state."""
    from cli_startup import measure

    return measure(args.runs)


def embedded(args) -> str:
    """The README's default run (`make run`), cold: see ``bench/embedded_run.py``."""
    from embedded_run import measure

    block, _ = measure([])
    return block.split("\n", 2)[2]  # without its own title: the caller adds one


def _flags(sub: argparse.Namespace, name: str) -> str:
    if name == "anchor":
        return (f" --tasks {sub.tasks} --concurrency {sub.concurrency[0]} --latency "
                + " ".join(f"{x:g}" for x in sub.latency))
    if name == "scaling":
        return (f" --latency {sub.latency[0]:g} --waves {sub.waves} --concurrency "
                + " ".join(str(c) for c in sub.concurrency))
    if name == "overhead":
        return f" --tasks {sub.tasks}"
    if name == "startup":
        return f" --runs {sub.runs}"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="+", choices=["anchor", "startup", "scaling", "overhead", "embedded", "all"],
                        help="the parts to measure, in this order, in one run")
    parser.add_argument("--tasks", type=int, default=30)
    parser.add_argument("--latency", type=float, nargs="+")
    parser.add_argument("--concurrency", type=int, nargs="+")
    parser.add_argument("--waves", type=int, default=4, help="scaling: episodes = waves × concurrency")
    parser.add_argument("--runs", type=int, default=7, help="startup: runs of each command")
    parser.add_argument("--write", type=Path, help="replace each measured part's block in FILE")
    args = parser.parse_args()
    parts = {"anchor": ("Against `tau2 run`", anchor, [0.0, 0.2], [4]),
             "startup": ("How fast the commands answer, and the fixed start", startup, None, None),
             "scaling": ("Scaling and memory", scaling, [1.0], [1, 4, 16, 32, 64]),
             "overhead": ("Overheads", overhead, None, None),
             "embedded": ("Embedded default", embedded, None, None)}
    chosen = list(parts) if "all" in args.what else list(dict.fromkeys(args.what))
    for name in chosen:
        title, fn, latency, concurrency = parts[name]
        sub = argparse.Namespace(**vars(args))
        sub.latency = args.latency or latency
        sub.concurrency = args.concurrency or concurrency
        if name == "overhead":
            sub.tasks = min(args.tasks, 20)
        start, load = time.perf_counter(), os.getloadavg()[0]
        body = fn(sub)
        took = time.perf_counter() - start
        block = (f"### {title}\n\nMachine: {machine()}; load average {load:.1f} at the start, "
                 f"{os.getloadavg()[0]:.1f} at the end. Command: `python bench/runtime_vs_tau2.py "
                 f"{name}{_flags(sub, name)}` ({took:.0f} s to measure).\n\n{body}")
        print(block + "\n", flush=True)
        if args.write and name == "startup":
            from cli_startup import MARKS

            replace_between(args.write, *MARKS, block)
        elif args.write:
            write_block(args.write, name, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
