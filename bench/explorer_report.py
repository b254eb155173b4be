"""How quick is the report with its episode explorer on a Table 3-sized run folder?

Generates a run folder of synthetic records shaped like real τ²-bench ones (opening request,
p0 and p1 with tool chains, critique and guard, judge verdicts, a conversation of tool calls
with JSON results, τ²'s checks), then times ``python -m runtime.report``'s build (reading the
records, the tables and plots, the explorer's pages) in this process, reports page sizes and
peak RSS, and, where chromium and playwright are installed, how long the index and the largest
task page take to load and an episode panel to open in headless chromium.

    python bench/explorer_report.py --tasks 200 --models 2 --trials 3 --write bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from benchkit import replace_between  # noqa: E402

START, END = "<!-- explorer_report:start -->", "<!-- explorer_report:end -->"

TOOLS = ["get_user_details", "get_reservation_details", "search_direct_flight", "update_reservation_flights",
         "cancel_reservation", "send_certificate", "calculate", "transfer_to_human_agents"]
WORDS = ("user reservation flight cabin economy refund policy check confirm cancel baggage insurance "
         "payment certificate passenger date origin destination status membership").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _plan(rng: random.Random, steps: int) -> dict:
    return {"plan": _text(rng, 60), "unknown_tools": [],
            "tool_chain": [{"name": rng.choice(TOOLS), "parameter_description": _text(rng, 6),
                            "reason": _text(rng, 10)} for _ in range(steps)]}


def _result(rng: random.Random) -> str:
    return json.dumps({"reservation_id": f"R{rng.randrange(10**6):06d}", "user_id": f"user_{rng.randrange(10**4)}",
                       "flights": [{"flight_number": f"HAT{rng.randrange(999):03d}", "date": "2024-05-20",
                                    "price": rng.randrange(50, 900)} for _ in range(4)],
                       "notes": _text(rng, 30)})


def record(rng: random.Random, task: int, mode: str, model: str, trial: int) -> dict:
    """One synthetic record, the size and shape of a real τ²-bench one."""
    key = {"env": "tau2", "domain": "airline", "task_id": str(task), "mode": mode, "model": model,
           "trial": trial, "strategy": "anti-leak" if mode == "refine" else ""}
    parts = ["tau2", "airline", str(task), mode, model, str(trial)] + (["anti-leak"] if mode == "refine" else [])
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": _text(rng, 40)}]
    for i in range(rng.randint(4, 12)):
        call_id = f"call_{task}_{trial}_{i}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": rng.choice(TOOLS), "arguments": json.dumps({"reservation_id": "ABC123"})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": _result(rng)})
        if rng.random() < 0.3:
            messages += [{"role": "assistant", "content": _text(rng, 25)}, {"role": "user", "content": _text(rng, 15)}]
    planned = mode != "direct"
    correct = rng.random() < 0.5  # grade and flags agree, as the verdict rule has them
    judgement = {"judgement": {"is_correct": correct, "grade": 1.0 if correct else 0.6,
                               "errors": {f"E{i}": not correct and i in (2, 5) for i in range(1, 7)},
                               "reasoning": _text(rng, 40)}, "attempts": 1, "failure": None}
    score = float(rng.random() < 0.5)
    return {
        "run_id": "bench", "key": key, "record_id": "|".join(parts), "status": "ok", "seed": rng.randrange(10**9),
        "opening_request": messages[1]["content"], "p0": _plan(rng, 6) if planned else None,
        "critique": {"grade": 0.6, "errors": {f"E{i}": i in (2, 5) for i in range(1, 7)},
                     "rationale": _text(rng, 50)} if mode == "refine" else None,
        "guard": {"fired": False, "action": "passed", "findings": [], "removed": [], "critic_attempts": 1}
        if mode == "refine" else None,
        "p1": _plan(rng, 7) if mode == "refine" else None,
        "judge_p0": judgement if planned else None, "judge_p1": judgement if mode == "refine" else None,
        "score": score, "score_name": "reward", "breakdown": {"DB": score, "COMMUNICATE": 1.0},
        "termination": "user_stop", "turns": len(messages), "messages": messages,
        "score_info": {"reward_info": {"reward": score, "db_check": {"db_match": bool(score), "db_reward": score},
                                       "action_checks": [{"action": {"name": rng.choice(TOOLS),
                                                                     "arguments": {"reservation_id": "ABC123"}},
                                                          "action_match": True, "action_reward": 1.0}] * 5,
                                       "communicate_checks": [], "reward_basis": ["DB", "COMMUNICATE"]}},
        "usage": {"total": {"calls": 9, "prompt_tokens": 30000, "completion_tokens": 900, "cost_usd": 0.01}},
        "timings_s": {"execute": 1.0}, "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:10+00:00",
    }


def generate(folder: Path, tasks: int, models: int, trials: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(folder / "records.jsonl", "w", encoding="utf-8") as fh:
        for task in range(tasks):
            for m in range(models):
                for trial in range(trials):
                    for mode in ("direct", "plan-first", "refine"):
                        fh.write(json.dumps(record(rng, task, mode, f"model-{m}", trial)) + "\n")
                        n += 1
    return n


def browser_timings(index: Path, task_page: Path) -> dict[str, float] | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not chromium:
        return None
    out: dict[str, float] = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = context.new_page()
        for name, path in (("index", index), ("largest task page", task_page)):
            times = []
            for _ in range(3):  # the browser's own navigation timing: request to end of load event
                page.goto(path.as_uri(), wait_until="load")
                times.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
            out[name] = statistics.median(times)
        out["open an episode"] = page.evaluate("""() => {
            const d = [...document.querySelectorAll('details.episode')].pop(), t = performance.now();
            d.open = true; d.dispatchEvent(new Event('toggle'));
            d.querySelector('.conversation').getBoundingClientRect();
            return performance.now() - t; }""") / 1000
        context.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it")
    parser.add_argument("--write", type=Path, help="replace this benchmark's block in FILE")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="explorer-bench-"))
    shutil.rmtree(folder, ignore_errors=True)
    n = generate(folder, args.tasks, args.models, args.trials)
    from runtime.reports import explorer
    from runtime.reports.report import build
    from runtime.folder.store import RunStore

    def timed(fn):
        wall, cpu = time.perf_counter(), time.process_time()
        value = fn()
        return value, time.perf_counter() - wall, time.process_time() - cpu

    _, whole, whole_cpu = timed(lambda: build(folder))
    records, read, read_cpu = timed(lambda: RunStore(folder).records())
    _, pages_s, pages_cpu = timed(lambda: explorer.write(folder, records, "bench"))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    site = folder / explorer.FOLDER
    task_pages = sorted((site / "tasks").glob("*.html"), key=lambda p: p.stat().st_size)
    sizes = [p.stat().st_size / 1e6 for p in task_pages]
    index_mb = (site / "index.html").stat().st_size / 1e6
    records_mb = (folder / "records.jsonl").stat().st_size / 1e6
    browser = browser_timings(site / "index.html", task_pages[-1])
    command = (f"python bench/explorer_report.py --tasks {args.tasks} --models {args.models} "
               f"--trials {args.trials}")
    when = time.strftime("%Y-%m-%d")
    lines = [f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {when}. Command: `{command}`.", "",
             f"{n} records ({args.tasks} tasks × {args.models} models × 3 modes × {args.trials} trials), "
             f"records.jsonl {records_mb:.0f} MB.", "",
             f"Load average {os.getloadavg()[0]:.1f} at the end (wall times grow with it; CPU times much less).", "",
             "| step | measured |", "|---|---|",
             f"| `runtime.report` build: tables, plots, explorer | {whole:.1f} s wall, {whole_cpu:.1f} s CPU |",
             f"| reading the records alone | {read:.1f} s wall, {read_cpu:.1f} s CPU |",
             f"| the explorer's pages alone ({len(task_pages)} task pages + index) | {pages_s:.1f} s wall, "
             f"{pages_cpu:.1f} s CPU |",
             f"| peak RSS of the process | {rss_mb:.0f} MB |",
             f"| index.html | {index_mb:.2f} MB |",
             f"| task page, median / largest | {statistics.median(sizes):.2f} / {sizes[-1]:.2f} MB |"]
    for what, seconds in (browser or {}).items():
        how = ("on the largest page (script and layout)" if what == "open an episode"
               else "(navigation to end of load event, median of 3)")
        lines.append(f"| headless chromium: {what} {how} | {seconds * 1000:.0f} ms |")
    if not browser:
        lines.append("| headless chromium | not measured (chromium or playwright missing) |")
    block = "\n".join(lines)
    print(block)
    if args.write:
        replace_between(args.write, START, END, block)
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
