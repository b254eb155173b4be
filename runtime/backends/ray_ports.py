"""A local Ray instance on ports the user chose (``--ray-port-range LOW-HIGH``), so a firewall
rule can name them: the head's servers take the first ports of the range (GCS, node manager,
object manager, runtime-env agent, dashboard agent, metrics), workers the rest. Ray's
``ray.init`` cannot place a local instance's ports, so the head is started with Ray's own
``ray start --head`` (which can) on loopback as the node address, and the driver joins it. The
process watcher (``runtime.backends.ray_reaper``) ends it with the driver, as it does an instance
``ray.init`` started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runtime.compose.config import RAY_FIXED_PORTS as FIXED
from runtime.compose.config import parse_port_range as parse_range  # noqa: F401 - one rule


def head_command(port_range: tuple[int, int], cpus: int, object_store_bytes: int) -> list[str]:
    lo, hi = port_range
    ports = [f"{flag}={lo + i}" for i, flag in enumerate(FIXED)]
    ray_cli = Path(sys.executable).with_name("ray")
    return [str(ray_cli) if ray_cli.exists() else "ray", "start", "--head",
            "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats",
            f"--num-cpus={cpus}", f"--object-store-memory={object_store_bytes}", *ports,
            f"--min-worker-port={lo + len(FIXED) + 3}", f"--max-worker-port={hi}"]


def start_head(port_range: tuple[int, int], cpus: int, object_store_bytes: int, temp_dir: str) -> str:
    """Start the head on ``port_range``; returns the address to join. ``temp_dir``: a folder of
    this run's own, so the instance is not announced in ``/tmp/ray/ray_current_cluster``, where
    any other local ``ray.init()`` on the machine would find and join it. ``RuntimeError`` with
    Ray's last words when it cannot start (a port in use, ...)."""
    command = [*head_command(port_range, cpus, object_store_bytes), f"--temp-dir={temp_dir}"]
    from runtime.backends.ray_lease import ray_environment  # its raylet gives up on a lost GCS soon

    done = subprocess.run(command, env={**os.environ, **ray_environment()}, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        last = " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])[:300]
        raise RuntimeError(f"ray start failed on ports {port_range[0]}-{port_range[1]}: {last}")
    return f"127.0.0.1:{port_range[0]}"
