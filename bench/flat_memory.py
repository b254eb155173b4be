"""Does a run's memory grow with its episode count?

Runs the real command (``python -m testkit.run_scripted -- --env tau2 --domain airline ...``,
scripted roles, no model server) at several episode counts — the same 50 airline tasks, Direct,
concurrency 4, more trials for more episodes — each in a fresh folder and a process of its own,
and reads each process's peak RSS from its own ``wait4``. Twice per count: records only
(``--no-report``) and the whole command (records, summary, report and explorer). The goal (#52):
a 3,000-episode run's peak within 15 % of a 600-episode run's.

    python bench/flat_memory.py --episodes 600 3000 --write bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from benchkit import machine, timed_cpu, write_block  # noqa: E402

TASKS = 50


def command(out: Path, episodes: int, report: bool) -> list[str]:
    trials = max(1, episodes // TASKS)
    return [sys.executable, "-m", "testkit.run_scripted", "--", "--env", "tau2", "--domain", "airline",
            "--tasks", str(TASKS), "--mode", "direct", "--trials", str(trials), "--concurrency", "4",
            "--model", "scripted/roles", "--no-cache", "--out", str(out),
            *([] if report else ["--no-report"])]


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[600, 3000])
    parser.add_argument("--write", type=Path, help="replace this bench's block in FILE")
    args = parser.parse_args()
    rows, peaks = [], {}
    work = Path(tempfile.mkdtemp(prefix="evr-flat-memory-"))
    try:
        for episodes in args.episodes:
            for report in (False, True):
                out = work / f"run-{episodes}-{int(report)}"
                wall, rss, cpu = timed_cpu(command(out, episodes, report))
                peaks[episodes, report] = rss
                rows.append(f"| {episodes} | {'records, summary, report, explorer' if report else 'records only (--no-report)'} "
                            f"| {wall:.1f} | {cpu:.1f} | {rss:.0f} | {folder_mb(out):.1f} |")
                print(rows[-1], flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    low, high = min(args.episodes), max(args.episodes)
    growth = [f"{'whole command' if report else 'records only'}: "
              f"{100 * (peaks[high, report] / peaks[low, report] - 1):+.1f} %" for report in (False, True)]
    block = "\n".join([
        "### A run's memory against its episode count",
        "",
        f"Machine: {machine()}. Command: `python bench/flat_memory.py --episodes "
        f"{' '.join(map(str, args.episodes))}` (scripted roles, airline, {TASKS} tasks, Direct, "
        "concurrency 4; peak RSS from each process's own `wait4`).",
        "",
        "| episodes | what ran | wall (s) | CPU (s) | peak RSS (MB) | folder (MB) |",
        "|---:|---|---:|---:|---:|---:|",
        *rows,
        "",
        f"Peak RSS at {high} episodes against {low}: " + "; ".join(growth) + " (goal: within 15 %).",
    ])
    print(block)
    if args.write:
        write_block(args.write, "flat_memory", block)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
