"""What containers cost: image build time (cold, cached) and per-episode overhead of the docker
launcher against the in-process one.

    python bench/docker_overhead.py [--tasks 1,2,3,4,5,6] [--skip-cold] [--out runs/bench/docker]

Needs a Docker engine and a base image (``python:3.11-slim``, the ``evr-base:local`` that
scripts/docker-ci.sh makes, or ``EVR_DOCKER_BASE_IMAGE``). Measures, for the env-tau2 and runtime images:

* cold build — every layer rebuilt (``nocache``), pip downloading from the registry;
* cached build — the same inputs again, every layer from the engine's cache;
* source change — one file of the image's sources changed (``envs/`` for env-tau2, ``runtime/``
  for runtime): only the layers after the source COPYs rebuild;
* reuse — the tag for the current inputs exists: what ``--sandbox docker`` pays on every run;
* container start — create, attach, start, answer ``hello`` (τ² imported), three times;
* episodes — the same τ²-bench episodes (airline, direct mode, scripted gold replay, concurrency
  1) with ``--sandbox inproc`` and ``--sandbox docker`` (one container), from the records'
  per-node timings, and the whole command's wall time.

Prints a Markdown table and writes ``<out>/docker_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envs import docker as dl  # noqa: E402
from envs.server_client import ServerCommand  # noqa: E402


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    result = fn(*args, **kw)
    return time.perf_counter() - t0, result


CHANGED_FILE = {"env-tau2": "envs/base.py", "runtime": "runtime/validate.py"}


def builds(client, target: str, skip_cold: bool) -> dict:
    inputs = dl.build_inputs(target, client)
    out: dict = {"tag": inputs.tag(), "base_image": inputs.base_image}
    if not skip_cold:
        out["cold_s"], _ = timed(dl.build_image, client, inputs, nocache=True, say=print)
    out["cached_s"], _ = timed(dl.build_image, client, inputs, say=print)
    with tempfile.TemporaryDirectory(prefix="evr-bench-repo-") as tmp:
        repo = Path(tmp)
        for name in (".dockerignore", "Dockerfile", *inputs.target.sources):
            source = REPO / name
            if source.is_dir():
                shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy(source, repo / name)
        with (repo / CHANGED_FILE[target]).open("a") as fh:
            fh.write("\n# benchmark: a source change\n")
        changed = dl.BuildInputs(target=inputs.target, base_image=inputs.base_image,
                                 build_args=inputs.build_args, wheels=inputs.wheels,
                                 ca_bundle=inputs.ca_bundle, base_image_id=inputs.base_image_id,
                                 repo=repo)
        out["source_change_s"], tag = timed(dl.build_image, client, changed, say=print)
        client.images.remove(tag)
    out["reuse_s"], _ = timed(dl.ensure_image, client, target)
    image = client.images.get(inputs.tag())
    out["image_size_mb"] = round(image.attrs["Size"] / 1e6)
    return out


def container_start(client, tag: str, n: int = 3) -> dict:
    launcher = dl.DockerLauncher(client, "tau2", tag, log_dir=Path(tempfile.mkdtemp()))
    command = ServerCommand(name="tau2 (docker)", argv=launcher.command)
    starts, closes = [], []
    for _ in range(n):
        server = dl.DockerEnvServer(command, launcher, start_timeout=120, reply_timeout=60)
        seconds, _ = timed(server.start)
        starts.append(seconds)
        seconds, _ = timed(server.close)
        closes.append(seconds)
    # In process, the same work is importing τ² and listing its domains.
    probe = ("import time; t=time.perf_counter(); from envs.tau2 import Tau2Environment; "
             "Tau2Environment().domains(); print(time.perf_counter()-t)")
    inproc = [float(subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                                   text=True, check=True).stdout.split()[-1]) for _ in range(n)]
    return {"docker_start_hello_s": starts, "docker_close_remove_s": closes,
            "inproc_import_s": inproc}


def episodes(tasks: str, sandbox: str, out: Path) -> dict:
    run = out / f"episodes-{sandbox}"
    shutil.rmtree(run, ignore_errors=True)
    argv = [sys.executable, "-m", "testkit.run_scripted", "--", "--env", "tau2",
            "--domain", "airline", "--mode", "direct", "--task-ids", tasks, "--concurrency", "1",
            "--model", "scripted/roles", "--sandbox", sandbox, "--out", str(run), "--no-cache"]
    env = {**os.environ, "EVR_DOCKER_SERVERS": "1"}
    seconds, proc = timed(subprocess.run, argv, cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{sandbox} run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line.strip()]
    per = [sum(r["timings_s"].values()) for r in rows]
    nodes: dict[str, list[float]] = {}
    for r in rows:
        for node, value in r["timings_s"].items():
            nodes.setdefault(node, []).append(value)
    return {"wall_s": seconds, "episodes": len(rows), "scores": [r["score"] for r in rows],
            "episode_s": per, "mean_episode_s": statistics.mean(per),
            "nodes_mean_s": {k: statistics.mean(v) for k, v in nodes.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="1,2,3,4,5,6")
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold (nocache) builds")
    parser.add_argument("--targets", default="env-tau2,runtime")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "docker")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    client = dl.connect()
    result = {"engine": client.version().get("Version"), "cpus": os.cpu_count()}
    result["build"] = {t: builds(client, t, args.skip_cold) for t in args.targets.split(",")}
    result["start"] = container_start(client, dl.ensure_image(client, "env-tau2"))
    result["inproc"] = episodes(args.tasks, "inproc", args.out)
    result["docker"] = episodes(args.tasks, "docker", args.out)
    (args.out / "docker_overhead.json").write_text(json.dumps(result, indent=2))

    s, i, d = result["start"], result["inproc"], result["docker"]
    n = i["episodes"]
    print("\n| measure | value |\n| --- | --- |")
    for target, b in result["build"].items():
        if "cold_s" in b:
            print(f"| {target} image, cold build (no layer cache, pip from the registry) | {b['cold_s']:.0f} s |")
        print(f"| {target} image, cached build (same inputs, every layer cached) | {b['cached_s']:.1f} s |")
        print(f"| {target} image, after a change to `{CHANGED_FILE[target]}` | {b['source_change_s']:.1f} s |")
        print(f"| {target} image, reuse (tag for the current inputs exists) | {b['reuse_s']:.2f} s |")
        print(f"| {target} image size | {b['image_size_mb']} MB |")
    print(f"| container start → `hello` (median of {len(s['docker_start_hello_s'])}) | "
          f"{statistics.median(s['docker_start_hello_s']):.2f} s (in process: import τ² "
          f"{statistics.median(s['inproc_import_s']):.2f} s) |")
    print(f"| container close + remove (median) | {statistics.median(s['docker_close_remove_s']):.2f} s |")
    print(f"| per episode, inproc (mean of {n}) | {i['mean_episode_s']:.2f} s |")
    print(f"| per episode, docker (mean of {d['episodes']}) | {d['mean_episode_s']:.2f} s |")
    print(f"| per-episode overhead of the container | {d['mean_episode_s'] - i['mean_episode_s']:+.2f} s "
          f"({100 * (d['mean_episode_s'] / i['mean_episode_s'] - 1):+.0f}%) |")
    print(f"| whole command, {n} episodes: inproc / docker | {i['wall_s']:.1f} s / {d['wall_s']:.1f} s |")
    for node in i["nodes_mean_s"]:
        print(f"| node `{node}` mean: inproc / docker | {i['nodes_mean_s'][node]:.2f} s / "
              f"{d['nodes_mean_s'].get(node, float('nan')):.2f} s |")
    assert i["scores"] == d["scores"], f"scores differ: {i['scores']} vs {d['scores']}"
    print(f"\nscores equal: {i['scores']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
