"""CPU one model call costs the runtime, outside the model: the model layer → litellm → the
OpenAI SDK → a loopback server answering at once (``bench/stub_server.py`` in its own process,
so its CPU is not counted). A τ² episode makes ~8 such calls, so this is the largest share of
the per-episode CPU that limits one process's throughput (see "Threads against Ray").

Prints CPU milliseconds per call (this process's user + system time over ``--calls`` calls) and,
with ``--profile``, where it goes (cProfile, cumulative, grouped by package).

    python bench/model_call_cpu.py --calls 500 --write bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import ROOT, Stub, machine, write_block  # noqa: E402

sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENAI_API_KEY", "bench-dummy")
import runtime  # noqa: E402,F401 - sets litellm's offline price map before litellm is imported
from runtime.llm.layer import Meter, ModelLayer, ModelSpec  # noqa: E402

MESSAGES = [{"role": "system", "content": "You are a retail customer-service agent."},
            {"role": "user", "content": "Hi, I need help with an order. [task retail/0]"}]
"""The stub answers an agent turn of retail task 0 (a tool call) for this conversation."""

SHARES = {
    "OpenAI SDK + httpx (request, connection, response)": ("openai/_base_client.py:", "(request)"),
    "litellm pricing the response (its logging)": ("litellm/cost_calculator.py:", "(completion_cost)"),
}


def client(stub: Stub):
    spec = ModelSpec(model="openai/stub", api_base=stub.base)
    return ModelLayer({"model": spec}).client("model", "executor", Meter())


def cpu_ms_per_call(stub: Stub, calls: int, rounds: int) -> list[float]:
    c = client(stub)
    for _ in range(20):  # connections, clients and price lookups warmed
        c.complete(MESSAGES)
    out = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(calls):
            c.complete(MESSAGES)
        out.append(1000 * (time.process_time() - t0) / calls)
    return out


def profile_shares(stub: Stub, calls: int) -> list[tuple[str, float]]:
    c = client(stub)
    for _ in range(20):
        c.complete(MESSAGES)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        c.complete(MESSAGES)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = max(v[3] for k, v in stats.items() if k[2] == "complete" and k[0].endswith("layer.py"))
    shares = []
    for label, (file_part, func) in SHARES.items():
        cum = sum(v[3] for k, v in stats.items() if file_part in f"{k[0]}:" and f"({k[2]})" == func)
        shares.append((label, 100 * cum / total))
    return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also print where the CPU goes")
    parser.add_argument("--write", type=Path, help="replace this benchmark's block in FILE")
    args = parser.parse_args()
    with Stub(0.0) as stub:
        ms = cpu_ms_per_call(stub, args.calls, args.rounds)
        shares = profile_shares(stub, args.calls) if args.profile or args.write else []
    load = os.getloadavg()[0]
    lines = [f"Machine: {machine()}; load average {load:.1f}. Command: `python bench/model_call_cpu.py "
             f"--calls {args.calls} --rounds {args.rounds}`.", "",
             f"CPU per model call through the model layer: **{statistics.median(ms):.2f} ms** "
             f"(median of {args.rounds} rounds of {args.calls} calls; min {min(ms):.2f}, max {max(ms):.2f}).",
             *([""] + [f"- {label}: {share:.0f} % of a call (cProfile, cumulative)" for label, share in shares]
               if shares else [])]
    block = "### One model call's CPU\n\n" + "\n".join(lines)
    print(block)
    if args.write:
        write_block(args.write, "model_call_cpu", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
