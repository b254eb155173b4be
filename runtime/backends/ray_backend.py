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
* **Per-provider limits are global:** one limiter actor holds a semaphore per provider; each
  model call of every worker takes a slot from it. A worker that dies has its slots returned.
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
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

try:
    import ray
except ImportError:  # pragma: no cover - checked in ensure_ray with a one-line message
    ray = None

from runtime.batch import Abort, Outcome
from runtime.config import RunConfig, UsageError
from runtime.episode.artifacts import Artifact, ArtifactMemo
from runtime.episode.spec import RunSpec
from runtime.records import EpisodeKey, EpisodeRecord

if TYPE_CHECKING:
    from runtime.build import Run

_SESSION: dict[str, Any] = {}
OBJECT_STORE_BYTES = 200 * 1024**2
"""Episodes move only small records: keep the local object store's shared memory small."""

Group = tuple[Any, Any, Any]


# ---- the Ray instance -----------------------------------------------------------------------------

ACCEPTED_ADDRESS = ("accepted: 'auto' or host:port of a running cluster, or no address for a "
                    "local instance")


def ensure_ray(address: str | None, workers: int | None) -> None:
    """Join ``address`` or start a local instance (once per process)."""
    if ray is None:
        raise UsageError("--backend ray needs Ray: pip install -e '.[ray]' (or pip install ray)")
    accepted = ACCEPTED_ADDRESS
    if address:
        reachable(address, accepted)
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False,
                                  configure_logging=False)
    if address:
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--ray-address {address!r}: cannot join a Ray cluster there "
                             f"({' '.join(str(exc).split())[:200]}); {accepted}") from exc
        return
    start_local(workers or os.cpu_count() or 1)


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


def start_local(cpus: int) -> None:
    """A local Ray instance with ``cpus`` CPUs, watched so no process of it outlives this one."""
    from runtime.backends import ray_reaper

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # loopback only; no token file written
    reaper = ray_reaper.start()
    _SESSION["reaper"] = reaper
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=OBJECT_STORE_BYTES)
    atexit.register(stop_local)


def stop_local() -> None:
    from runtime.backends import ray_reaper

    if ray is not None and ray.is_initialized():
        ray.shutdown()
    reaper = _SESSION.pop("reaper", None)
    if reaper is not None:
        ray_reaper.stop(reaper)


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


def recipe(spec: RunSpec, out: Path) -> Recipe:
    from runtime.backends import WORKER_SETUP

    return Recipe(spec=spec.model_dump(mode="json"), log_dir=str(out / "containers"),
                  setup=list(WORKER_SETUP))


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
        from runtime.llm.layer import ResponseCache

        self.cache = ResponseCache(Path(path))

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

    def __init__(self, recipe: Recipe, cache: Any, limiter: Any, holder: str):
        from runtime.episode.services import open_services
        from runtime.logs import quiet_loguru

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

    def ready(self) -> int:
        return os.getpid()

    def run(self, key: EpisodeKey, seeded: list[Artifact]) -> tuple[EpisodeRecord, list[Artifact], Abort | None]:
        from runtime.episode.engine import run_episode

        self.memo.seed(seeded)
        record, made = run_episode(self.spec, self.services, key, self.memo)
        return record, made, Abort.of(self.services.layer.aborted)

    def abort(self, reason: str, credentials: bool) -> None:
        self.services.layer.abort(reason, credentials)

    def close(self) -> None:
        self.services.env.close()


# ---- the driver ---------------------------------------------------------------------------------

class Pool:
    """The run's workers, the cache and limiter actors."""

    def __init__(self, recipe: Recipe, workers: int, concurrency: int, cache_path: str | None,
                 model_concurrency: int | None):
        self.spec = recipe
        self.n = workers
        self.slots = max(1, math.ceil(concurrency / workers))
        pinned = _driver_node()
        self.cache = None
        if cache_path is not None:
            self.cache = ray.remote(CacheService).options(num_cpus=0, max_concurrency=32, **pinned) \
                .remote(cache_path)
        self.limiter = None
        if model_concurrency:
            self.limiter = ray.remote(LimiterService).options(num_cpus=0, max_concurrency=10_000, **pinned) \
                .remote(model_concurrency)
        cpus = float(ray.cluster_resources().get("CPU", workers))
        self.cpus_each = min(1.0, cpus / workers)
        self.generation = [0] * workers
        self.actors = [self._start(i) for i in range(workers)]
        ray.get([a.ready.remote() for a in self.actors])

    def _start(self, i: int) -> Any:
        holder = f"{i}.{self.generation[i]}"
        # two more than the episode slots: ``abort`` and ``close`` must get through while it is full
        return ray.remote(EpisodeWorker).options(num_cpus=self.cpus_each, max_concurrency=self.slots + 2) \
            .remote(self.spec, self.cache, self.limiter, holder)
    def replace(self, i: int) -> None:
        """A worker died: its limiter slots go back, a fresh worker takes its place."""
        if self.limiter is not None:
            self.limiter.drop.remote(f"{i}.{self.generation[i]}")
        self.generation[i] += 1
        self.actors[i] = self._start(i)

    def close(self, timeout_s: float = 30.0) -> None:
        """Close each worker's environment (containers, env servers), then end the actors."""
        refs = [a.close.remote() for a in self.actors]
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        for actor in [*self.actors, self.cache, self.limiter]:
            if actor is not None:
                ray.kill(actor, no_restart=True)


def workers_for(config: RunConfig) -> int:
    if config.ray_workers:
        return config.ray_workers
    return max(1, int(ray.cluster_resources().get("CPU", os.cpu_count() or 1)))


class RayExecutor:
    """Episodes to workers, by (domain, task, trial) so a group's modes share one memo."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.owner: dict[Group, int] = {}
        self.load = [0] * pool.n
        self.in_flight: dict[Any, tuple[EpisodeKey, int, int]] = {}

    def submit(self, key: EpisodeKey, artifacts: list[Artifact]) -> bool:
        pool = self.pool
        group = (key.domain, key.task_id, key.trial)
        w = self.owner.setdefault(group, min(range(pool.n), key=self.load.__getitem__))
        if self.load[w] >= pool.slots:
            return False
        ref = pool.actors[w].run.remote(key, artifacts)
        self.in_flight[ref] = (key, w, pool.generation[w])
        self.load[w] += 1
        return True

    def wait(self) -> list[Outcome]:
        done, _ = ray.wait(list(self.in_flight), num_returns=1)
        outcomes = []
        for ref in done:
            key, w, generation = self.in_flight.pop(ref)
            self.load[w] -= 1
            try:
                record, made, aborted = ray.get(ref)
                outcomes.append(Outcome(key=key, record=record, artifacts=made, aborted=aborted))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                # The worker died mid-episode: the batch loop records it as an error; the first
                # of its lost episodes replaces it.
                outcomes.append(Outcome(key=key, record=None, lost=(type(exc).__name__, str(exc))))
                if self.pool.generation[w] == generation:
                    self.pool.replace(w)
        return outcomes

    def abort(self, cause: Abort) -> None:
        for actor in self.pool.actors:
            actor.abort.remote(cause.reason, cause.credentials)

    def close(self, finished: bool) -> None:
        # At the end, time for every worker to remove its containers and save their logs; on
        # Ctrl-C, an error or a stop, a short wait and then the workers are ended regardless.
        self.pool.close(timeout_s=120.0 if finished else 10.0)


def executor(run: "Run") -> Callable[[RunSpec, int], RayExecutor]:
    """``open_executor`` for the batch loop: Ray workers for ``run``'s pending episodes."""
    config = run.config
    cache = run.services.layer.cache
    cache_path = str(cache.path) if cache is not None and getattr(cache, "path", None) else None

    def open_executor(spec: RunSpec, pending: int) -> RayExecutor:
        ensure_ray(config.ray_address, config.ray_workers)
        pool = Pool(recipe(spec, run.out), min(workers_for(config), pending), spec.concurrency,
                    cache_path, config.model_concurrency)
        return RayExecutor(pool)

    return open_executor
