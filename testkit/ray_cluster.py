"""A real multi-node Ray cluster on this machine, for tests and benchmarks.

Each node is its own ``ray start --block`` (a head, then nodes that join it) on loopback, with
ports of its own (found free, never Ray's defaults, so it cannot join or disturb another Ray
instance on the machine) and a temp folder of its own. A node's processes are its ``ray start``
and everything below it, so a node is killed (SIGKILL, as a machine dies) or stopped by those
pids alone: never ``ray stop``, which would end every Ray process of the user.

Every node is started with the project on ``PYTHONPATH``, as a real cluster needs the project
installed on each machine.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from runtime.backends.ray_reaper import with_descendants

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
PORT_NAMES = ("node-manager-port", "object-manager-port",
              "dashboard-agent-listen-port", "dashboard-agent-grpc-port", "runtime-env-agent-port",
              "metrics-export-port")
FAST_DETECTION = {"RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "1000",
                  "RAY_health_check_failure_threshold": "3"}
"""The head declares a silent node dead after about 3 s instead of Ray's default of about 15 s:
a test's node loss is noticed sooner (a real cluster keeps Ray's defaults)."""
WORKER_PORTS = 40
"""Ports per node for Ray's worker processes (each worker holds one)."""


STOP_GRACE_S = 2.0
"""How long :meth:`LocalCluster.stop` waits after SIGTERM before it SIGKILLs what is left."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_block(size: int, taken: set[int]) -> list[int]:
    """``size`` consecutive ports no one listens on and none in ``taken``: one node's ports."""
    for _ in range(200):
        low = random.randrange(20000, 60000 - size)
        block = list(range(low, low + size))
        if taken & set(block):
            continue
        socks = []
        try:
            for port in block:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return block
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free block of ports")


@dataclass
class Node:
    name: str
    proc: subprocess.Popen
    ports: dict[str, int]
    pids: list[int] = field(default_factory=list)

    def processes(self) -> list[int]:
        """This node's processes now (and every one seen before that may still run)."""
        now = with_descendants([self.proc.pid]) if self.proc.poll() is None else []
        self.pids = sorted(set(self.pids) | set(now))
        return [p for p in self.pids if _alive(p)]


class LocalCluster:
    """``with LocalCluster() as c: c.add_node("n2"); ... c.address``; every process ends on exit."""

    def __init__(self, cpus_per_node: int = 1, root: Path | None = None,
                 env: dict[str, str] | None = None):
        self.cpus = cpus_per_node
        self.env = dict(env or {})
        """Added to every node's environment (its workers inherit it: e.g. a provider's key)."""
        self.root = Path(root or tempfile.mkdtemp(prefix="evr-ray-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.temp = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # short: Ray's socket paths
        self.nodes: dict[str, Node] = {}
        self.seen: set[int] = set()
        self.gcs_port = free_port()
        self.taken = {self.gcs_port}
        self.address = f"127.0.0.1:{self.gcs_port}"

    # ---- nodes -----------------------------------------------------------------------------

    def _start(self, name: str, head: bool, wait_s: float = 90.0) -> Node:
        block = port_block(len(PORT_NAMES) + WORKER_PORTS, self.taken)
        self.taken |= set(block)
        ports = dict(zip(PORT_NAMES, block))
        low, high = block[len(PORT_NAMES)], block[-1]
        cmd = [RAY, "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus", str(self.cpus),
               "--object-store-memory", str(80 * 1024**2), "--disable-usage-stats",
               "--min-worker-port", str(low), "--max-worker-port", str(high),
               *[a for n, p in ports.items() for a in (f"--{n}", str(p))]]
        if head:
            cmd += ["--head", "--port", str(self.gcs_port), "--include-dashboard", "false",
                    "--temp-dir", str(self.temp)]
        else:
            cmd += ["--address", self.address]
        env = {**os.environ, **FAST_DETECTION, **self.env, "RAY_AUTH_MODE": "disabled",
               "RAY_USAGE_STATS_ENABLED": "0",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        env.pop("EVR_RAY_OWNER", None)  # a cluster is not one driver's local instance
        log = open(self.root / f"{name}.log", "ab")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        log.close()
        node = Node(name, proc, ports)
        self.nodes[name] = node
        self._wait_alive(len([n for n in self.nodes.values() if n.proc.poll() is None]), wait_s, name)
        node.processes()
        return node

    def start_head(self) -> "LocalCluster":
        self._start("head", head=True)
        return self

    def add_node(self, name: str) -> Node:
        return self._start(name, head=False)

    def alive_nodes(self) -> int:
        """Nodes the cluster counts alive (asked in a child process: this one may be a driver)."""
        code = ("import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False, "
                "configure_logging=False); print(sum(n['Alive'] for n in ray.nodes()))")
        env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
        env.pop("EVR_RAY_OWNER", None)
        try:
            out = subprocess.run([sys.executable, "-c", code, self.address], capture_output=True,
                                 text=True, timeout=30, env=env)
            return int(out.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            return -1
        except (ValueError, IndexError):
            return -1

    def _wait_alive(self, count: int, wait_s: float, name: str) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.nodes[name].proc.poll() is not None:
                raise RuntimeError(f"ray node {name} exited: see {self.root / (name + '.log')}")
            if self.alive_nodes() == count:
                return
            time.sleep(1)
        raise RuntimeError(f"ray node {name} did not join within {wait_s:.0f} s")

    def kill_node(self, name: str) -> None:
        """SIGKILL every process of the node at once, as when its machine dies."""
        node = self.nodes.pop(name)
        pids = node.processes()
        self.seen |= set(pids)
        _kill(pids, signal.SIGKILL)
        node.proc.wait(10)

    def ports(self) -> list[int]:
        return [self.gcs_port, *(p for n in self.nodes.values() for p in n.ports.values())]

    # ---- the end -----------------------------------------------------------------------------

    def processes(self) -> list[int]:
        found = {p for n in self.nodes.values() for p in n.processes()}
        self.seen |= found
        return sorted(found)

    def leftovers(self) -> list[int]:
        """Processes of any node, ever seen, that still run (after ``stop``: none)."""
        return sorted(p for p in self.seen if _alive(p))

    def hosting(self, title: str) -> list[str]:
        """Names of the nodes running a process whose title holds ``title`` (a Ray actor's
        process is titled ``ray::<Class>``)."""
        names = []
        for name, node in self.nodes.items():
            for pid in node.processes():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if title in cmd:
                    names.append(name)
                    break
        return names

    def stop(self) -> None:
        """End every process of every node (SIGTERM, then SIGKILL), then remove the temp folder.
        The grace is short: ``ray start --block`` and the GCS were seen to outlive a SIGTERM by
        more than 12 s even on a healthy cluster, so a longer one only costs every test its time."""
        pids = self.processes()
        _kill(pids, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.2)
        _kill([p for p in pids if _alive(p)], signal.SIGKILL)
        # a raylet may have started a worker after the first look: end those too, and give the
        # killed ones a moment to be gone (a SIGKILLed process is not gone at once)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (alive := [p for p in self.processes() + pids if _alive(p)]):
            _kill(alive, signal.SIGKILL)
            time.sleep(0.2)
        for node in self.nodes.values():
            try:
                node.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.nodes.clear()
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start_head()

    def __exit__(self, *exc: object) -> None:
        self.stop()



def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
