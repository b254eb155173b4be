"""Time the offline default run (``make run``'s command) and say where its time goes.

Runs ``python -m runtime.validate --env tau2 --mode refine`` (embedded SmolLM2-135M, cold: a
new run folder, no response cache) in a child process and prints its wall time, CPU time and
peak RSS (the child's own rusage), the machine's load average before and after (a loaded
machine makes every figure slower), and, from the embedded model's per-call trace
(``LOCAL_LLM_TRACE``), per stage: calls, prompt tokens read and reused, generated tokens, and
seconds spent reading prompts, generating, and in sampling/grammar/Python.

    python bench/embedded_run.py                      # the default run
    python bench/embedded_run.py --write bench/RESULTS.md
    python bench/embedded_run.py -- --no-judge        # extra options for runtime.validate
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import write_block  # noqa: E402

COMMAND = ["-m", "runtime.validate", "--env", "tau2", "--mode", "refine"]


def run_child(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of ``cmd``, from the child's own rusage."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def stages(trace: Path) -> list[dict]:
    """Per-stage sums of the per-call trace, the most expensive stage first."""
    rows: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    if trace.exists():
        for line in trace.read_text(encoding="utf-8").splitlines():
            call = json.loads(line)
            row = rows[call["purpose"]]
            row["calls"] += 1
            for key in ("prompt_tokens", "reused_tokens", "prompt_eval_tokens", "prompt_eval_s",
                        "completion_tokens", "generation_s", "total_s"):
                row[key] += call[key]
    out = [{"stage": name, **row} for name, row in rows.items()]
    return sorted(out, key=lambda r: -r["total_s"])


def table(rows: list[dict]) -> str:
    head = ("| stage | calls | prompt tokens | of which reused | prompt reading (s) | generated tokens | "
            "generating (s) | sampling, grammar, Python (s) | total (s) |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    total = defaultdict(float)
    for r in rows + [None]:
        if r is None:
            r = {"stage": "**all**", **total}
        else:
            for key, value in r.items():
                if key != "stage":
                    total[key] += value
        other = r["total_s"] - r["prompt_eval_s"] - r["generation_s"]
        lines.append(
            f"| {r['stage']} | {r['calls']:.0f} | {r['prompt_tokens']:.0f} | {r['reused_tokens']:.0f} | "
            f"{r['prompt_eval_s']:.1f} | {r['completion_tokens']:.0f} | {r['generation_s']:.1f} | "
            f"{other:.1f} | {r['total_s']:.1f} |")
    return "\n".join(lines)


def measure(extra: list[str], label: str = "") -> tuple[str, int]:
    """Run the default command once; (the results block, its exit code)."""
    with tempfile.TemporaryDirectory() as tmp:
        out, trace = Path(tmp) / "run", Path(tmp) / "trace.jsonl"
        cmd = [sys.executable, *COMMAND, "--out", str(out), "--no-cache", *extra]
        env = {**os.environ, "LOCAL_LLM_TRACE": str(trace), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        load_before = os.getloadavg()
        wall, cpu, rss, code = run_child(cmd, env)
        load_after = os.getloadavg()
        rows = stages(trace)
        records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines() if x.strip()] \
            if (out / "records.jsonl").exists() else []
    shown = " ".join(["python", *COMMAND, *extra])
    status = ", ".join(f"{r['key']['task_id']}: {r['status']} {r['score']}" for r in records) or "none"
    block = "\n".join([
        "### Embedded default",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after"
        + (f" ({label})" if label else "") + ".",
        f"Command: `python bench/embedded_run.py{' -- ' + ' '.join(extra) if extra else ''}`, "
        f"which times `{shown}` cold (new run folder, `--no-cache`).",
        "",
        f"**{wall:.0f} s** wall, {cpu:.0f} s CPU, peak RSS **{rss:.0f} MB**, exit code {code}; "
        f"records: {status}.",
        "",
        table(rows) if rows else "(no trace: the embedded model was not called)",
    ])
    return block, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="replace the embedded block of FILE with the result")
    parser.add_argument("--label", default="", help="a note printed with the figures (e.g. 'under load')")
    parser.add_argument("extra", nargs="*", help="more runtime.validate options (after --)")
    args = parser.parse_args()
    block, code = measure(args.extra, args.label)
    print(block, flush=True)
    if args.write:
        write_block(args.write, "embedded", block)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
