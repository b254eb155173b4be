"""The Ray backend: a run's episodes on Ray workers, on this machine or on a cluster.

Design:

* **Workers build their own parts, once.** An episode matrix holds things that cannot travel
  (environment adapters, the model layer with its SQLite cache, the planner factory), so each
  worker is a Ray actor that receives a :class:`Recipe` (the run's validated ``RunConfig`` plus
  the matrix's plain fields, e.g. the task ids the driver already chose) and rebuilds the
  environment, the model layer and the planner in its ``__init__``. Per-process caches (τ²'s
  parsed DBs and tool objects) are therefore built once per worker, not per episode. A worker
  runs up to ``ceil(concurrency / workers)`` episodes at once in its own threads.
* **One writer.** Workers never touch the run folder. An episode comes back to the driver as
  its record plus the shared artifacts (opening request, ``p0``, judge of ``p0``) its worker
  made; the driver writes the artifacts, then appends the record through the same ``RunStore``
  the threads backend uses — atomic, resumable, duplicate-free in the same way.
* **Shared artifacts stay shared.** Every episode of one (domain, task, trial) goes to the same
  worker (the least-loaded one when the group first appears), whose in-memory artifact memo makes
  ``p0`` once for all modes, as the run folder does for threads. The driver seeds the memo with
  that group's artifacts already on disk, so a resumed run reuses them.
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
import json
import math
import os
import threading
from collections import defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

try:
    import ray
except ImportError:  # pragma: no cover - checked in ensure_ray with a one-line message
    ray = None

from runtime.config import RunConfig, UsageError
from runtime.records import EpisodeKey, EpisodeRecord, StageError
from runtime.store import artifact_relpath, write_json_atomic

if TYPE_CHECKING:
    from runtime.build import Run

_SESSION: dict[str, Any] = {}
OBJECT_STORE_BYTES = 200 * 1024**2
"""Episodes move only small records: keep the local object store's shared memory small."""

Group = tuple[Any, Any, Any]


def group_of(key: dict[str, Any]) -> Group:
    """The (domain, task, trial) an artifact or episode belongs to: the unit a worker owns."""
    return key.get("domain"), key.get("task_id"), key.get("trial")


# ---- the Ray instance -----------------------------------------------------------------------------

def ensure_ray(address: str | None, workers: int | None) -> None:
    """Join ``address`` or start a local instance (once per process)."""
    if ray is None:
        raise UsageError("--backend ray needs Ray: pip install -e '.[ray]' (or pip install ray)")
    accepted = "accepted: 'auto' or host:port of a running cluster, or no address for a local instance"
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
    """Everything a worker needs to rebuild the run's episode matrix; all of it picklable."""

    config: RunConfig
    matrix_fields: dict[str, Any]
    log_dir: str
    setup: list[Callable[[], None]] = field(default_factory=list)


def recipe(run: "Run") -> Recipe:
    from runtime.backends import WORKER_SETUP

    m = run.matrix
    plain = {name: getattr(m, name) for name in (
        "run_id", "domain", "task_ids", "modes", "trials", "seed", "planner_name", "max_steps",
        "concurrency", "retry_errors", "strategies", "judge")}
    return Recipe(config=run.config, matrix_fields=plain, log_dir=str(run.out / "containers"),
                  setup=list(WORKER_SETUP))


class ArtifactMemo:
    """A worker's stand-in for the run folder's shared artifacts: ``get_or_create`` as in
    ``RunStore``, in memory; what it makes goes back to the driver with the episode's record."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._made: set[str] = set()
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()

    def seed(self, artifacts: dict[str, dict[str, Any]]) -> None:
        with self._guard:
            for rel, data in artifacts.items():
                self._data.setdefault(rel, data)

    def get_or_create(self, kind: str, key: dict[str, Any], make: Callable[[], Any]) -> tuple[Any, bool]:
        rel = artifact_relpath(kind, key)
        with self._guard:
            lock = self._locks[rel]
        with lock:
            if rel in self._data:
                return json.loads(json.dumps(self._data[rel]["value"])), False
            # Stored as the run folder would store it (JSON), so reuse reads back the same value.
            data = json.loads(json.dumps({"kind": kind, "key": key, "value": make()}, default=str))
            with self._guard:
                self._data[rel] = data
                self._made.add(rel)
            return data["value"], True

    def made_for(self, group: Group) -> dict[str, dict[str, Any]]:
        with self._guard:
            return {rel: self._data[rel] for rel in self._made if group_of(self._data[rel]["key"]) == group}


def build_worker_matrix(spec: Recipe, cache: Any, limiter: Any) -> tuple[Any, ArtifactMemo]:
    """The worker's own episode matrix, built from the recipe (never writing the run folder)."""
    from envs import get_environment
    from runtime.build import model_specs, planner_factory, quiet_loguru, register_providers
    from runtime.llm.layer import ModelLayer
    from runtime.runner import EpisodeMatrix

    for hook in spec.setup:
        hook()
    quiet_loguru()
    config = spec.config
    specs, _ = model_specs(config)
    register_providers(specs)
    env = get_environment(config.env, sandbox=config.sandbox)
    if Path(spec.log_dir).parent.is_dir():  # same machine (or a shared folder) as the driver
        from runtime.scrub import scrub

        env.capture_logs(Path(spec.log_dir), scrub=scrub)
    layer = ModelLayer(specs, cache=cache)
    layer.limiter = limiter
    memo = ArtifactMemo()
    matrix = EpisodeMatrix(env=env, layer=layer, store=memo, make_planner=planner_factory(config.planner),
                           **spec.matrix_fields)
    return matrix, memo


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
    """One worker process: its own environment, model layer and planner; episodes in threads."""

    def __init__(self, spec: Recipe, cache: Any, limiter: Any, holder: str):
        self.matrix, self.memo = build_worker_matrix(
            spec, RemoteCache(cache) if cache is not None else None,
            RemoteLimiter(limiter, holder) if limiter is not None else None)

    def ready(self) -> int:
        return os.getpid()

    def run(self, key: EpisodeKey, seeded: dict[str, dict[str, Any]]) -> tuple[EpisodeRecord, dict[str, dict]]:
        from runtime.runner import run_episode

        self.memo.seed(seeded)
        record = run_episode(self.matrix, key)
        return record, self.memo.made_for((key.domain, key.task_id, key.trial))

    def close(self) -> None:
        self.matrix.env.close()


# ---- the driver ---------------------------------------------------------------------------------

class ArtifactIndex:
    """The run folder's shared artifacts by group, read once; the driver adds what comes back."""

    def __init__(self, root: Path):
        self.root = root
        self.by_group: dict[Group, dict[str, dict[str, Any]]] = defaultdict(dict)
        for path in sorted((root / "artifacts").glob("*/*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            self.by_group[group_of(data.get("key", {}))][str(path.relative_to(root))] = data

    def write_new(self, group: Group, artifacts: dict[str, dict[str, Any]]) -> None:
        known = self.by_group[group]
        for rel, data in artifacts.items():
            if rel not in known:
                write_json_atomic(self.root / rel, data)
                known[rel] = data


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _lost(run: "Run", key: EpisodeKey, exc: BaseException) -> EpisodeRecord:
    from runtime.runner import trial_seed

    now = _now()
    return EpisodeRecord(run_id=run.matrix.run_id, key=key, record_id=key.id(), status="error",
                         seed=trial_seed(run.matrix.seed, key.trial),
                         error=StageError(stage="worker", type=type(exc).__name__,
                                          message=" ".join(str(exc).split())[:2000]),
                         started_at=now, finished_at=now)


class Pool:
    """The run's workers, the cache and limiter actors, and which worker owns which group."""

    def __init__(self, run: "Run", workers: int):
        config = run.config
        self.run = run
        self.spec = recipe(run)
        self.n = workers
        self.slots = max(1, math.ceil(run.matrix.concurrency / workers))
        pinned = _driver_node()
        self.cache = None
        if run.matrix.layer.cache is not None:
            path = getattr(run.matrix.layer.cache, "path", None)
            self.cache = ray.remote(CacheService).options(num_cpus=0, max_concurrency=32, **pinned) \
                .remote(str(path))
        self.limiter = None
        if config.model_concurrency:
            self.limiter = ray.remote(LimiterService).options(num_cpus=0, max_concurrency=10_000, **pinned) \
                .remote(config.model_concurrency)
        cpus = float(ray.cluster_resources().get("CPU", workers))
        self.cpus_each = min(1.0, cpus / workers)
        self.generation = [0] * workers
        self.actors = [self._start(i) for i in range(workers)]
        ray.get([a.ready.remote() for a in self.actors])

    def _start(self, i: int) -> Any:
        holder = f"{i}.{self.generation[i]}"
        return ray.remote(EpisodeWorker).options(num_cpus=self.cpus_each, max_concurrency=self.slots + 1) \
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


def run(run: "Run", on_done: Callable[[EpisodeRecord], None] = lambda r: None) -> list[EpisodeRecord]:
    """Run every pending episode of ``run`` on Ray workers; the driver writes every result."""
    from runtime.runner import pending

    config, matrix = run.config, run.matrix
    todo = pending(matrix)
    if not todo:
        return []
    ensure_ray(config.ray_address, config.ray_workers)
    pool = Pool(run, min(workers_for(config), len(todo)))
    index = ArtifactIndex(matrix.store.root)
    owner: dict[Group, int] = {}
    load = [0] * pool.n
    in_flight: dict[Any, tuple[EpisodeKey, int, int]] = {}
    queue = deque(todo)
    written: list[EpisodeRecord] = []
    window = 4 * matrix.concurrency
    finished = False
    try:
        while queue or in_flight:
            held: list[EpisodeKey] = []
            scanned = 0
            while queue and len(in_flight) < matrix.concurrency and scanned < window:
                key = queue.popleft()
                scanned += 1
                group = (key.domain, key.task_id, key.trial)
                w = owner.setdefault(group, min(range(pool.n), key=load.__getitem__))
                if load[w] >= pool.slots:
                    held.append(key)
                    continue
                ref = pool.actors[w].run.remote(key, index.by_group.get(group, {}))
                in_flight[ref] = (key, w, pool.generation[w])
                load[w] += 1
            queue.extendleft(reversed(held))
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                key, w, generation = in_flight.pop(ref)
                load[w] -= 1
                try:
                    record, artifacts = ray.get(ref)
                    index.write_new((key.domain, key.task_id, key.trial), artifacts)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                    # The worker died mid-episode: recorded as an error (--retry-errors reruns it);
                    # the first of its lost episodes replaces it.
                    record = _lost(run, key, exc)
                    if pool.generation[w] == generation:
                        pool.replace(w)
                matrix.store.append(record)
                written.append(record)
                on_done(record)
        finished = True
    finally:
        # At the end, time for every worker to remove its containers and save their logs; on
        # Ctrl-C or an error, a short wait and then the workers are ended regardless.
        pool.close(timeout_s=120.0 if finished else 10.0)
    return written

