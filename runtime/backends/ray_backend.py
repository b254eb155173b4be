"""The Ray executor: a run's episodes on Ray workers, on this machine or on a cluster.

It only runs episodes; the batch loop (``runtime.batch``) decides what runs, when the run stops
and writes every result, as it does for threads. Design:

* **Workers build their own services, once.** Environment adapters, the model layer with its
  SQLite cache and the planner cannot travel, so each worker is a Ray actor that receives the
  run's ``RunSpec`` as plain data (dumped whole, validated back: every setting arrives, with no
  list of names to keep in step) and builds its services in ``__init__``. Per-process caches
  (τ²'s parsed DBs and tool objects) are therefore built once per worker, not per episode. A
  worker runs up to ``ceil(concurrency / workers)`` episodes at once in its own threads.
* **Workers write nothing.** An episode comes back as its record, the shared artifacts it made
  and whether its worker's model layer stopped the run (rejected credentials, a dead endpoint);
  the driver's batch loop handles them exactly as it handles a thread's.
* **Shared artifacts stay shared.** Every episode of one (domain, task, trial) goes to the same
  worker (the least-loaded one when the group first appears), whose in-memory artifact memo makes
  ``p0`` once for all modes. The batch loop seeds it with that group's artifacts already on disk,
  so a resumed run reuses them.
* **Response cache across machines:** served by the driver. One cache actor, pinned to the
  driver's node, owns the SQLite file; workers anywhere ask it (``get``/``put``). Keys are the
  whole request, as before, so a worker on another machine reads and fills the same cache.
* **Losing a node costs nothing:** workers are restarted by Ray, lost episodes run again, and a
  worker that cannot be placed stops the run (exit 3, resumable) instead of hanging it
  (:mod:`runtime.backends.ray_workers`). What a lost attempt spent is not lost with it: each
  model call is counted as it happens in a ledger actor on the driver's node
  (:mod:`runtime.backends.ray_ledger`) and kept in the re-run episode's ``attempts``.
* **Losing the head stops every call.** A call leaves a worker only once the ledger has counted
  it, and a watch thread in each worker stops its calls, then the worker, once the head's GCS
  stops answering (:mod:`runtime.backends.ray_lease`): no call is made after the command ends.
* **Per-provider limits are global:** one limiter actor holds a semaphore per provider; each
  model call of every worker takes a slot from it. A worker that dies (each incarnation is a
  holder of its own) has its slots returned.
* **Nothing left behind.** A local instance is started with a watcher
  (:mod:`runtime.backends.ray_reaper`) that ends every process of it once the driver is gone,
  even after a SIGKILL; on Ctrl-C the driver closes the workers' environments and kills them.
  On a cluster (``ray_address``) the workers are the driver's job's actors: Ray ends them when
  the driver's job ends.
"""

from __future__ import annotations

import asyncio
import atexit
import math
import os
import subprocess
import tempfile
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

try:
    import ray
except ImportError:  # pragma: no cover - checked in ensure_ray with a one-line message
    ray = None

from runtime.backends import ray_lease, ray_logs, ray_loopback, ray_reaper
from runtime.batch import Abort
from runtime.compose.config import RunConfig, UsageError
from runtime.episode.artifacts import Artifact, ArtifactMemo
from runtime.episode.spec import RunSpec
from runtime.folder.records import EpisodeKey, EpisodeRecord

if TYPE_CHECKING:
    from runtime.compose.build import Run

_SESSION: dict[str, Any] = {}
OBJECT_STORE_BYTES = 200 * 1024**2
"""Episodes move only small records: keep the local object store's shared memory small."""

Group = tuple[Any, Any, Any]


# ---- the Ray instance -----------------------------------------------------------------------------

ACCEPTED_ADDRESS = ("accepted: 'auto' or host:port of a running cluster, or no address for a "
                    "local instance")


def ensure_ray(address: str | None, workers: int | None, port_range: str | None = None) -> None:
    """Join ``address`` or start a local instance (once per process)."""
    if ray is None:
        raise UsageError("--backend ray needs Ray: pip install -e '.[ray]' (or pip install ray)")
    accepted = ACCEPTED_ADDRESS
    if address:
        reachable(address, accepted)
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=True,
                                  configure_logging=False)
    if address:
        ray_logs.start()  # Ray's own lines to run.log, not the console
        atexit.register(stop_local)
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--ray-address {address!r}: cannot join a Ray cluster there "
                             f"({' '.join(str(exc).split())[:200]}); {accepted}") from exc
        return
    start_local(workers or os.cpu_count() or 1, port_range)


def reachable(address: str, accepted: str, timeout_s: float = 5.0) -> None:
    """Fail in one line when a host:port answers nothing (Ray itself would retry for minutes)."""
    import socket

    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"--ray-address {address!r} is not host:port; {accepted}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise UsageError(f"--ray-address {address!r}: nothing answers there ({exc.strerror or exc}); "
                         f"{accepted}") from exc


def start_local(cpus: int, port_range: str | None = None) -> None:
    """A local Ray instance with ``cpus`` CPUs, on loopback only
    (``runtime.backends.ray_loopback``), watched so no process of it outlives this one;
    ``port_range`` ``"LOW-HIGH"``: every port it listens on in that range
    (``runtime.backends.ray_ports``)."""
    if ray.is_initialized():
        return
    token_auth()
    _SESSION["restore_switch"] = ray_loopback.keep_on_loopback()
    reaper = ray_reaper.start()
    _SESSION["reaper"] = reaper
    atexit.register(stop_local)
    ray_logs.start()  # Ray's own lines to run.log, not the console
    common = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    if port_range:
        from runtime.backends import ray_ports

        _SESSION["temp_dir"] = tempfile.mkdtemp(prefix="evr-ray-")  # short: Ray's socket paths
        try:
            address = ray_ports.start_head(ray_ports.parse_range(port_range), cpus,
                                           OBJECT_STORE_BYTES, _SESSION["temp_dir"])
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"--ray-port-range {port_range}: {exc}") from None
        ray.init(address=address, **common)
    else:  # "local": a new instance, never one another program on this machine started
        ray.init(address="local", num_cpus=cpus, object_store_memory=OBJECT_STORE_BYTES,
                 _system_config=dict(ray_lease.RAY_SETTINGS), **common)
    try:
        ray_loopback.check_on_loopback(ray.get_runtime_context().gcs_address)
    except RuntimeError as exc:
        stop_local()
        raise UsageError(f"--backend ray: {exc}") from None


def token_auth() -> bool:
    """Ray's token authentication for the local instance: its servers listen on loopback only,
    but without a token any local user or program could run code through them (the class of
    CVE-2023-48022). A fresh random token per process, in the environment Ray's processes
    inherit — never written to a file. A ``RAY_AUTH_MODE`` the user set is left as it is.
    Returns whether token authentication is on."""
    import secrets

    if os.environ.get("RAY_AUTH_MODE"):
        return os.environ["RAY_AUTH_MODE"].lower() == "token"
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    try:  # Ray reads both once, at import: refresh them as Ray's own token set-up does
        import importlib

        raylet = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):
        pass
    return True


def stop_local() -> None:
    from runtime.backends import ray_workers

    if ray is not None and ray.is_initialized() and not ray_workers.HEAD_LOST:
        ray.shutdown()  # (a lost head: it would wait for the dead GCS; the reaper ends the rest)
    ray_logs.stop()
    reaper = _SESSION.pop("reaper", None)
    if reaper is not None:
        ray_reaper.stop(reaper)
    restore_switch = _SESSION.pop("restore_switch", None)
    if restore_switch is not None:
        restore_switch()
    temp_dir = _SESSION.pop("temp_dir", None)
    if temp_dir is not None:
        import shutil

        shutil.rmtree(temp_dir, ignore_errors=True)


def _driver_node() -> dict[str, Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray.get_runtime_context().get_node_id()
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=node, soft=False)}


# ---- what a worker needs ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Recipe:
    """Everything a worker needs to build its services; all of it plain data or picklable."""

    spec: dict[str, Any]
    """``RunSpec.model_dump(mode="json")``: the whole spec, validated back in the worker."""
    log_dir: str
    setup: list[Callable[[], None]] = field(default_factory=list)


def recipe(spec: RunSpec, out: Path, setup: list[Callable[[], None]]) -> Recipe:
    return Recipe(spec=spec.model_dump(mode="json"), log_dir=str(out / "containers"),
                  setup=list(setup))


class RemoteCache:
    """The model layer's response cache, answered by the cache actor on the driver's node."""

    def __init__(self, actor: Any):
        self.actor = actor

    def get(self, key: str) -> dict[str, Any] | None:
        return ray.get(self.actor.get.remote(key))

    def put(self, key: str, reply: dict[str, Any]) -> None:
        ray.get(self.actor.put.remote(key, reply))


class RemoteLimiter:
    """Slots from the run's one limiter actor, tagged with this worker so a dead one's return."""

    def __init__(self, actor: Any, holder: str):
        self.actor = actor
        self.holder = holder

    @contextmanager
    def slot(self, provider: str) -> Iterator[None]:
        ray.get(self.actor.acquire.remote(provider, self.holder))
        try:
            yield
        finally:
            ray.get(self.actor.release.remote(provider, self.holder))


class CacheService:
    """Owns the response cache's SQLite file on the driver's node."""

    def __init__(self, path: str):
        from runtime.llm.guarded_cache import GuardedCache

        self.cache = GuardedCache(Path(path))

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def put(self, key: str, reply: dict[str, Any]) -> None:
        self.cache.put(key, reply)


class LimiterService:
    """One semaphore per provider for the whole run; remembers who holds what."""

    def __init__(self, limit: int):
        self.limit = limit
        self.sems: dict[str, asyncio.Semaphore] = {}
        self.held: dict[tuple[str, str], int] = defaultdict(int)
        self.in_use: dict[str, int] = defaultdict(int)
        self.peak: dict[str, int] = defaultdict(int)

    async def acquire(self, provider: str, holder: str) -> None:
        sem = self.sems.setdefault(provider, asyncio.Semaphore(self.limit))
        await sem.acquire()
        self.held[(provider, holder)] += 1
        self.in_use[provider] += 1
        self.peak[provider] = max(self.peak[provider], self.in_use[provider])

    async def release(self, provider: str, holder: str) -> None:
        if self.held.get((provider, holder), 0) > 0:
            self._give_back(provider, holder, 1)

    async def drop(self, holder: str) -> None:
        """Return every slot a (dead) worker held."""
        for (provider, who), count in list(self.held.items()):
            if who == holder and count:
                self._give_back(provider, who, count)

    def _give_back(self, provider: str, holder: str, count: int) -> None:
        self.held[(provider, holder)] -= count
        self.in_use[provider] -= count
        for _ in range(count):
            self.sems[provider].release()

    async def peaks(self) -> dict[str, int]:
        return dict(self.peak)


class EpisodeWorker:
    """One worker process: its own services and artifact memo; episodes in threads."""

    def __init__(self, recipe: Recipe, cache: Any, limiter: Any, ledger: Any, index: int):
        from runtime.episode.services import open_services
        from runtime.folder.logs import quiet_loguru

        # who holds limiter slots: this incarnation (Ray may restart the worker on another node)
        holder = f"{index}@{ray.get_runtime_context().get_node_id()[:12]}:{os.getpid()}"
        self.holder = holder
        self.ledger = ledger
        self.services: Any = None

        for hook in recipe.setup:
            hook()
        quiet_loguru()
        self.spec = RunSpec.model_validate(recipe.spec)
        log_dir = Path(recipe.log_dir)
        self.services = open_services(
            self.spec, cache=RemoteCache(cache) if cache is not None else None,
            limiter=RemoteLimiter(limiter, holder) if limiter is not None else None,
            # same machine (or a shared folder) as the driver: keep the env servers' logs there
            log_dir=log_dir if log_dir.parent.is_dir() else None)
        self.memo = ArtifactMemo()
        self.watch = ray_lease.HeadWatch(ray.get_runtime_context().gcs_address, self.stop_calls,
                                         close=self.close)

    def stop_calls(self, reason: str) -> BaseException:
        """No model call of this worker leaves from now on (the head or the driver is gone)."""
        if self.services is None:
            return RuntimeError(reason)
        return self.services.layer.abort(reason)

    def ready(self) -> str:
        """This incarnation's limiter holder: the driver tells a restarted worker by it."""
        return self.holder

    def run(self, key: EpisodeKey, seeded: list[Artifact], attempt: str
            ) -> tuple[EpisodeRecord, list[Artifact], Abort | None, str]:
        """The episode, each model call counted in the ledger as it happens (``attempt``: this
        run's id there), so a loss of this process leaves its calls counted."""
        from runtime.backends.ray_ledger import LedgerSink
        from runtime.episode.engine import run_episode

        self.memo.seed(seeded)
        sink = (LedgerSink(self.ledger, attempt, self.holder, lost=self.stop_calls)
                if self.ledger is not None else None)
        record, made = run_episode(self.spec, self.services, key, self.memo, sink=sink)
        return record, made, Abort.of(self.services.layer.aborted), self.holder

    def abort(self, reason: str, credentials: bool) -> None:
        self.services.layer.abort(reason, credentials)

    def close(self) -> None:
        self.watch.stop()
        if self.services is not None:
            self.services.env.close()


# ---- the driver ---------------------------------------------------------------------------------

def workers_for(config: RunConfig) -> int:
    if config.ray_workers:
        return config.ray_workers
    return max(1, int(ray.cluster_resources().get("CPU", os.cpu_count() or 1)))


def executor(run: "Run", on_status: Callable[[str], None] = lambda text: None,
             setup: list[Callable[[], None]] | None = None) -> Callable[[RunSpec, int], Any]:
    """``open_executor`` for the batch loop: Ray workers for ``run``'s pending episodes, each
    calling the ``setup`` hooks (``runtime.backends.add_worker_setup``) before it builds."""
    from runtime.backends import ray_workers  # imports Ray, which ensure_ray checks first
    config = run.config
    cache = run.services.layer.cache
    cache_path = str(cache.path) if cache is not None and getattr(cache, "path", None) else None

    def open_executor(spec: RunSpec, pending: int) -> ray_workers.RayExecutor:
        ensure_ray(config.ray_address, config.ray_workers, config.ray_port_range)
        workers = min(workers_for(config), pending)
        cpus_each = ray_workers.placement(workers)
        pinned = _driver_node()
        cache_actor = limiter = None
        if cache_path is not None:
            cache_actor = ray.remote(CacheService).options(num_cpus=0, max_concurrency=32, **pinned) \
                .remote(cache_path)
        if config.model_concurrency:
            limiter = ray.remote(LimiterService).options(num_cpus=0, max_concurrency=10_000, **pinned) \
                .remote(config.model_concurrency)
        from runtime.folder.call_ledger import Ledger, new_journal

        # its journal: in the run folder, on this machine (the ledger is pinned here): replayed
        # if the head goes, and read by the next run if this process goes too
        journal = new_journal(run.out)
        ledger = ray.remote(Ledger).options(num_cpus=0, max_concurrency=64, **pinned).remote(journal)
        slots = max(1, math.ceil(spec.concurrency / workers))
        pool = ray_workers.Pool(EpisodeWorker, (recipe(spec, run.out, setup or []), cache_actor, limiter, ledger),
                                workers, slots, cpus_each, cache_actor, limiter, ledger, journal)
        return ray_workers.RayExecutor(pool, config.ray_placement_timeout, on_status)

    return open_executor
