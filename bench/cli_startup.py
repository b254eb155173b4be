"""How fast the commands answer, and the process's fixed start before the first episode.

Each figure is a whole process timed from start to exit, ``--runs`` times (min / median / max):

* ``--help``, ``--version`` and bad input (an unknown option value, a setting out of range) of
  the commands: the parser path, which imports nothing that runs episodes;
* a dry run (``--dry-run``): once an earlier command remembered τ²'s tasks, litellm's prices and
  the t test's sizes (``envs.facts``), it imports none of τ², litellm, LangGraph, statsmodels,
  scipy; the first time on a machine it does;
* ``tau2 --help`` for comparison: τ²'s own command line imports its whole runner first;
* what ending the process costs: the interpreter's teardown against ``runtime.cli.process_end.end``;
* the fixed start and end of a run: ``runtime.validate`` on a finished run folder of the anchor's
  matrix (30 airline episodes, every record done: it imports what runs episodes, builds the
  environment and the matrix, finds nothing pending and writes the summary), and the same
  imports alone (``python -c "import runtime.compose.build, envs.tau2, ..."``).

    python bench/cli_startup.py --runs 7
    python bench/cli_startup.py --runs 7 --write bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import (  # noqa: E402
    IMPORTS_ONLY,
    ROOT,
    RUN_IMPORTS,
    Stub,
    child_env,
    check_scored,
    machine,
    replace_between,
    runtime_cmd,
    task_ids,
)

MARKS = ("<!-- cli_startup:start -->", "<!-- cli_startup:end -->")
PY = sys.executable
VALIDATE = [PY, "-m", "runtime.validate"]

ANSWERS = [
    ("`runtime.validate --help`", VALIDATE + ["--help"], 0),
    ("`runtime.validate --version`", VALIDATE + ["--version"], 0),
    ("`runtime.validate --mode nope` (bad option value)", VALIDATE + ["--mode", "nope"], 2),
    ("`runtime.validate --trials 0` (bad setting)", VALIDATE + ["--trials", "0"], 2),
    ("`runtime.ablate --help`", [PY, "-m", "runtime.ablate", "--help"], 0),
    ("`runtime.table3 --config missing.yaml`", [PY, "-m", "runtime.table3", "--config", "missing.yaml"], 2),
    ("`runtime.report --help`", [PY, "-m", "runtime.report", "--help"], 0),
    ("`leakbench.evaluate --help`", [PY, "-m", "leakbench.evaluate", "--help"], 0),
    ("`envs.docker --help`", [PY, "-m", "envs.docker", "--help"], 0),
    ("`python -c pass` (the interpreter alone)", [PY, "-c", "pass"], 0),
    ("`tau2 --help` (τ²'s own CLI, for comparison)", [str(Path(PY).with_name("tau2")), "--help"], 0),
]


def teardown(fast: bool) -> float:
    """Seconds from the last line of a process that imported the run path and parsed the
    airline DB to its exit: the interpreter's teardown, or ``runtime.cli.process_end.end``."""
    code = (RUN_IMPORTS + "; from envs.tau2 import tasks; tasks.reference_env('airline'); "
            "import time; print(time.time(), flush=True)")
    if fast:
        code += "; from runtime.cli.process_end import end; end(0)"
    done = subprocess.run([PY, "-c", code], cwd=ROOT, env=child_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=True)
    return time.time() - float(done.stdout.split()[-1])


DRY_RUN = ["--dry-run", "--domain", "retail", "--mode", "all", "--tasks", "40", "--model", "openai/gpt-4o"]

LEARNT = [
    ("`runtime.validate --domain nope` (unknown domain)", VALIDATE + ["--domain", "nope"], 2),
    ("`runtime.validate --domain retail --split nope` (unknown split)",
     VALIDATE + ["--domain", "retail", "--split", "nope"], 2),
    ("`runtime.validate --domain retail --task-ids 999` (unknown task id)",
     VALIDATE + ["--domain", "retail", "--task-ids", "999"], 2),
    ("`runtime.validate --model anthropic/claude-x` (no ANTHROPIC_API_KEY)",
     VALIDATE + ["--model", "anthropic/claude-x"], 2),
    ("`runtime.ablate --domain nope` (unknown domain)", [PY, "-m", "runtime.ablate", "--domain", "nope"], 2),
    ("`runtime.validate --dry-run --domain retail --mode all --tasks 40 --model openai/gpt-4o` (dry run)",
     VALIDATE + DRY_RUN, 0),
]
"""Bad inputs only τ² or litellm can judge, and a dry run (τ²'s tasks, litellm's prices, the t
test's sizes): answered after their imports the first time on a machine, at once from then on
(``runtime.compose.preflight``, ``envs.facts``), measured after one warm-up run each."""


def wall(cmd: list[str], expect: int, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    env = {k: v for k, v in child_env(env).items() if k != "ANTHROPIC_API_KEY"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - start
    if done.returncode != expect:
        raise RuntimeError(f"{' '.join(cmd[:5])} exited {done.returncode}, not {expect}: "
                           f"{done.stderr.decode(errors='replace')[-500:]}")
    return took


def spread(times: list[float]) -> str:
    return f"{min(times):.2f} | {statistics.median(times):.2f} | {max(times):.2f}"


def measure(runs: int) -> str:
    rows = []
    for label, cmd, expect in ANSWERS:
        times = [wall(cmd, expect) for _ in range(runs)]
        rows.append((label, times))
        print(label, spread(times), file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as home:
        learnt = {"EVR_FACTS_HOME": home}
        for label, cmd, expect in LEARNT:
            wall(cmd, expect, learnt)  # the first time: the full check, which remembers
            times = [wall(cmd, expect, learnt) for _ in range(runs)]
            rows.append((label + ", remembered", times))
            print(rows[-1][0], spread(times), file=sys.stderr, flush=True)
    first = []
    for _ in range(min(runs, 3)):
        with tempfile.TemporaryDirectory() as home:
            first.append(wall(LEARNT[0][1], 2, {"EVR_FACTS_HOME": home}))
    rows.append((f"{LEARNT[0][0]}, the first time on a machine (nothing remembered)", first))
    first = []
    for _ in range(min(runs, 3)):
        with tempfile.TemporaryDirectory() as home:
            first.append(wall(LEARNT[-1][1], 0, {"EVR_FACTS_HOME": home}))
    rows.append((f"{LEARNT[-1][0]}, the first time on a machine (nothing remembered)", first))
    ids = task_ids("airline", 30)
    with Stub(0.0) as stub, tempfile.TemporaryDirectory() as out:
        cmd = runtime_cmd(stub, "airline", ids, 4, Path(out))
        wall(cmd, 0)
        check_scored(Path(out), len(ids))
        fixed = [wall(cmd, 0) for _ in range(runs)]
    rows.append((("fixed start and end of a run: `runtime.validate` on its finished folder (30 airline "
                  "episodes, nothing pending)"), fixed))
    print(rows[-1][0], spread(fixed), file=sys.stderr, flush=True)
    imports = [wall(IMPORTS_ONLY, 0) for _ in range(runs)]
    rows.append(("of which: importing what runs episodes (litellm, LangGraph, τ², the runtime)", imports))
    rows.append(("the interpreter's teardown at exit, after those imports and the airline DB",
                 [teardown(False) for _ in range(runs)]))
    rows.append(("the same, ended by `runtime.cli.process_end.end` (what the commands now do)",
                 [teardown(True) for _ in range(runs)]))
    lines = [f"Each a whole process, {runs} runs; seconds. Load average {os.getloadavg()[0]:.1f} at the end.",
             "", "| command | min (s) | median (s) | max (s) |", "|---|---|---|---|"]
    lines += [f"| {label} | {spread(times)} |" for label, times in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--write", type=Path, help="replace the block between its markers in FILE")
    args = parser.parse_args()
    start, load = time.perf_counter(), os.getloadavg()[0]
    body = measure(args.runs)
    block = (f"### How fast the commands answer, and the fixed start\n\nMachine: {machine()}; "
             f"load average {load:.1f} at the start. Command: `python bench/cli_startup.py "
             f"--runs {args.runs}` ({time.perf_counter() - start:.0f} s to measure).\n\n{body}")
    print(block)
    if args.write:
        replace_between(args.write, *MARKS, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
