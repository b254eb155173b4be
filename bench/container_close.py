"""How a τ² env-server container ends when its run closes it: exit code and time to removed.

    python bench/container_close.py [--n 3] [--out runs/bench/container-close]

Needs a Docker engine and the env-tau2 image for the current inputs (``python -m envs.docker
build``; scripts/docker-ci.sh makes it). Measures:

* teardown — in the env-tau2 image, the seconds between the end of a script that imported τ²
  and the process's end: a normal interpreter exit vs ``os._exit`` (what the env server does
  once it is done). Above the close grace (5 s), a server that did not skip it was killed (137);
* close — real τ² env servers in containers: start, ``hello``, then the pool's close (shutdown op,
  EOF on stdin, wait, removal): seconds and the exit code each container's log records.

Prints a Markdown table and writes ``<out>/container_close.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envs import docker as dl  # noqa: E402

PROBE = ("import time, sys, os; import tau2.registry; sys.stdout.write(repr(time.time()) + '\\n'); "
         "sys.stdout.flush(); {end}")


def teardown(client, tag: str, quick: bool) -> float:
    """Seconds from the script's last statement to the process's end (clock inside the
    container, read by a shell that runs after python)."""
    end = "os._exit(0)" if quick else "pass"
    script = f"python -c \"{PROBE.format(end=end)}\" 2>/dev/null; date +%s.%N"
    out = client.containers.run(tag, ["sh", "-c", script], network_mode="none", remove=True,
                                stdout=True, stderr=False)
    done, ended = (float(x) for x in out.decode().split())
    return ended - done


def close(client, tag: str) -> tuple[float, int]:
    logs = Path(tempfile.mkdtemp())
    launcher = dl.DockerLauncher(client, "tau2", tag, log_dir=logs)
    pool = dl.DockerServerPool(launcher, max_size=1, start_timeout=300, reply_timeout=120)
    with pool.lease() as server:
        name = server.container_name
    t0 = time.perf_counter()
    pool.close()
    seconds = time.perf_counter() - t0
    header = json.loads((logs / f"{name}.log").read_text().splitlines()[0])
    return seconds, header["exit_code"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "container-close")
    args = parser.parse_args()
    client = dl.connect()
    tag = dl.build_inputs("env-tau2", client, pull=False).tag()
    if not dl.image_exists(client, tag):
        print(f"error: no {tag} image: build it with `python -m envs.docker build`", file=sys.stderr)
        return 2
    result = {"image": tag, "load_before": os.getloadavg()[0],
              "teardown_normal_s": [teardown(client, tag, False) for _ in range(args.n)],
              "teardown_os_exit_s": [teardown(client, tag, True) for _ in range(args.n)]}
    closes = [close(client, tag) for _ in range(args.n)]
    result["close_s"] = [s for s, _ in closes]
    result["exit_codes"] = [c for _, c in closes]
    result["load_after"] = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "container_close.json").write_text(json.dumps(result, indent=2))
    med = statistics.median
    print(f"| measure (median of {args.n}; load average {result['load_before']:.1f} → "
          f"{result['load_after']:.1f}) | value |")
    print("| --- | --- |")
    print(f"| τ² interpreter teardown, normal exit | {med(result['teardown_normal_s']):.2f} s "
          f"(max {max(result['teardown_normal_s']):.2f} s) |")
    print(f"| the same, `os._exit` once done (the env server) | {med(result['teardown_os_exit_s']):.2f} s |")
    print(f"| container close → removed, its log saved | {med(result['close_s']):.2f} s "
          f"(max {max(result['close_s']):.2f} s) |")
    print(f"| exit codes in the containers' logs | {', '.join(map(str, result['exit_codes']))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
