"""The Ray executor's workers: placed on the cluster, watched, and survived when a node is lost.

* **Placement fails fast.** Before anything starts, :func:`placement` checks that the requested
  workers fit the cluster's nodes (each worker asks ``min(1, cluster CPUs / workers)`` CPU, and
  one worker's CPU must come from one node); if not, one line naming both, exit 2.
* **Ray restarts lost workers.** Each worker is an actor with ``max_restarts``: when its process
  or node dies, Ray starts it again on a node that has room (``SPREAD`` over the nodes). Calls
  are not retried by Ray (``max_task_retries=0``): the batch loop re-runs a lost episode itself,
  seeded with the shared artifacts returned since, so a ``p0`` already returned is never remade.
* **Temporary is not death.** An episode's ``ActorUnavailableError`` marks its worker *down*, not
  dead: the worker is pinged (``ray.wait`` with timeouts, never a bare ``ray.get``) until it
  answers, restarted or not. Only ``ActorDiedError`` (its restarts used up) is death: the actor
  is then killed so it frees its CPU.
* **Groups move.** A (domain, task, trial) group whose worker is down goes to the least-loaded
  live worker when its next episode is submitted.
* **Never a hang.** Each worker's CPU is a bundle of one placement group (``SPREAD``), so Ray
  tells when a worker is placed and moves a lost node's bundles to nodes with room. A worker
  whose bundle is on no live node for ``placement_timeout`` seconds (or that is placed but does
  not answer within ``ANSWER_S``) stops the run: no new episode starts, the running ones finish
  (for at most that long again), and the batch loop ends with exit 3 and a resumable folder.
* **A lost head ends the run at once.** A watch thread probes the head's GCS port every
  ``PING_S`` (:class:`ClusterWatch`); after ``HEAD_MISSES`` misses the episodes in flight become
  lost attempts and the run stops in one line, exit 3, instead of Ray's 60 s hang and exit 1.
  Their calls are read from the ledger's journal on this machine (every call that left), or,
  where it cannot be read, from the ledger's last reading, said to be a lower bound. The
  workers stop calling by themselves (``runtime.backends.ray_lease``).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import ray

from runtime.batch import Outcome, Stalled
from runtime.compose.config import UsageError
from runtime.episode.artifacts import Artifact
from runtime.backends import ray_lease
from runtime.folder import call_ledger
from runtime.folder.call_ledger import lost_attempt, replay
from runtime.folder.records import EpisodeKey, in_flight_words

Group = tuple[Any, Any, Any]
RESTARTS = 4
"""Times Ray restarts one worker (a lost node, a crashed process) before it counts as dead."""
PING_S = 1.0
"""How often a worker that is down or starting is asked whether it answers again."""
ANSWER_S = 300.0
"""How long a placed worker may take to answer (building its services: imports, environment)."""
RELEASE_S = 15.0
"""How long placement waits for CPUs that a run just ended on the cluster is giving back."""
HEAD_MISSES = ray_lease.MISSES
"""Probes of the head's GCS port in a row (``PING_S`` apart) that find nothing listening before
the head counts as lost: Ray itself would hang for ``gcs_rpc_server_reconnect_timeout_s`` (60 s)
and then end the process with exit 1 and nothing saved."""


def placement(workers: int) -> float:
    """CPU per worker, after checking that ``workers`` of them fit the cluster's live nodes; a
    ``UsageError`` (exit 2) naming what was asked and what the cluster has when they do not."""
    cpus = [float(n["Resources"].get("CPU", 0.0)) for n in ray.nodes() if n.get("Alive")]
    total = sum(cpus)
    each = min(1.0, total / workers) if total else 0.0
    room = sum(math.floor(c / each + 1e-9) for c in cpus) if each else 0
    free = float(ray.available_resources().get("CPU", 0.0))
    # A run that just ended on this cluster (the last wave of --until-decided) has removed its
    # placement group, but Ray gives the CPUs back asynchronously: wait for them a little
    # before calling the cluster full, never when the workers could not fit it at all.
    deadline = time.monotonic() + RELEASE_S
    while room >= workers and free + 1e-9 < each * workers and time.monotonic() < deadline:
        time.sleep(0.1)
        free = float(ray.available_resources().get("CPU", 0.0))
    if room >= workers and free + 1e-9 >= each * workers:
        return each
    nodes = ", ".join(f"{c:g}" for c in cpus) or "none"
    raise UsageError(
        f"--ray-workers {workers}: {workers} workers of {each:.2g} CPU each do not fit the Ray "
        f"cluster ({len(cpus)} live node(s) with CPUs {nodes}; {free:g} CPU free): room for "
        f"{min(room, math.floor(free / each + 1e-9) if each else 0)}; accepted: at most that many "
        f"workers, or a cluster with more CPUs")


def cluster_now() -> str:
    """The cluster as it is, in words, for the line that stops a run."""
    try:
        nodes = sum(bool(n.get("Alive")) for n in ray.nodes())
        total = ray.cluster_resources().get("CPU", 0.0)
        free = ray.available_resources().get("CPU", 0.0)
        return f"cluster now: {nodes} live node(s), {free:g} of {total:g} CPU free"
    except Exception as exc:  # noqa: BLE001 - the stop matters more than its description
        return f"cluster state unknown: {type(exc).__name__}"


@dataclass
class Worker:
    """One worker slot: Ray's actor handle and what the driver last heard from it."""

    handle: Any
    state: str = "starting"
    """starting (not yet placed) | alive | down (lost, being restarted) | dead (restarts used up)"""
    since: float = field(default_factory=time.monotonic)
    holder: str | None = None
    """The limiter holder of the incarnation that last answered (node and pid)."""
    ping: Any = None
    next_ping: float = 0.0
    unplaced_since: float | None = field(default_factory=time.monotonic)
    """Since when its reserved CPU has been on no live node (None: placed)."""

    def set(self, state: str) -> None:
        if state != self.state:
            self.state, self.since = state, time.monotonic()


class Pool:
    """The run's worker actors and the shared cache and limiter actors (pinned to the driver)."""

    def __init__(self, worker_class: type, args: tuple, workers: int, slots: int,
                 cpus_each: float, cache: Any, limiter: Any, ledger: Any = None,
                 journal: str | None = None):
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.n, self.slots, self.limiter, self.cache = workers, slots, limiter, cache
        self.ledger = ledger
        """Where workers count each model call as it happens (``runtime.backends.ray_ledger``)."""
        self.journal = journal
        """The ledger's journal, in the run folder (``runtime.folder.call_ledger``): its counts
        once the ledger is gone, and the next run's if this process goes too."""
        # One bundle per worker, spread over the nodes: Ray reserves the CPUs, moves a lost
        # node's bundles to nodes with room, and tells whether each is placed (``placed``).
        self.group = placement_group([{"CPU": cpus_each}] * workers, strategy="SPREAD")
        actor = ray.remote(worker_class)
        # two more than the episode slots: ``ready``, ``abort`` and ``close`` get through when full
        self.workers = [Worker(actor.options(
            num_cpus=cpus_each, max_concurrency=slots + 2, max_restarts=RESTARTS, max_task_retries=0,
            scheduling_strategy=PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=i),
        ).remote(*args, i)) for i in range(workers)]

    def placed(self) -> set[int]:
        """The workers whose reserved CPU is on a live node now."""
        from ray.util.placement_group import placement_group_table

        try:
            live = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
            table = placement_group_table(self.group)
        except Exception:  # noqa: BLE001 - the GCS is busy: assume nothing changed
            return {i for i, w in enumerate(self.workers) if w.unplaced_since is None}
        return {int(i) for i, node in table.get("bundles_to_node_id", {}).items() if node in live}

    def alive(self) -> list[int]:
        return [i for i, w in enumerate(self.workers) if w.state == "alive"]

    def forget(self, w: Worker) -> None:
        """Return the limiter slots of ``w``'s last incarnation (it died holding them)."""
        if self.limiter is not None and w.holder is not None:
            self.limiter.drop.remote(w.holder)

    def close(self, timeout_s: float) -> None:
        """Close each live worker's environment (containers, env servers), then end every actor."""
        refs = [self.workers[i].handle.close.remote() for i in self.alive()]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        for actor in [*(w.handle for w in self.workers), self.cache, self.limiter, self.ledger]:
            if actor is not None:
                try:
                    ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
        from ray.util.placement_group import remove_placement_group

        try:
            remove_placement_group(self.group)
        except Exception:  # noqa: BLE001 - the cluster is going or gone
            pass


class ClusterWatch:
    """The cluster's state, read in threads of their own: a call to a dead head's GCS blocks
    (for up to a minute, then Ray ends the process), so the batch loop never makes one. Two
    threads, so that nothing can hold up the probe: one probes the GCS port every ``PING_S``
    with a plain TCP connect and nothing else — ``head_lost`` once ``HEAD_MISSES`` probes in a
    row found nothing, a few seconds whatever the network (a loopback-only namespace, where a
    dead GCS refuses at once, included); the other, while the GCS answers, asks which workers
    are placed and what the ledger has counted of the attempts running (``counted``: all that
    is left of them once the head, where the ledger lives, is gone). Were the probe to share a
    thread with those reads, a read caught by the head's death would block it past Ray's own
    60-second exit, and the runtime's stop would never come."""

    def __init__(self, pool: Pool, gcs_address: str | None):
        self.pool = pool
        self.gcs = gcs_address
        self.head_lost = False
        self.misses = 0
        self.answered = threading.Event()
        self.placed: set[int] | None = None
        self.counted: dict[str, dict[str, Any]] = {}
        self.stopped = threading.Event()
        threading.Thread(target=self._probe, name="ray-head-probe", daemon=True).start()
        threading.Thread(target=self._read, name="ray-cluster-read", daemon=True).start()

    def _probe(self) -> None:
        while not self.stopped.is_set() and not self.head_lost:
            if self.answers():
                self.misses = 0
                self.answered.set()
            else:
                self.misses += 1
                self.head_lost = self.misses >= HEAD_MISSES
            self.stopped.wait(PING_S)

    def _read(self) -> None:
        while not self.stopped.is_set() and not self.head_lost:
            if self.answered.wait(PING_S) and not self.head_lost and not self.misses:
                self.answered.clear()
                self.placed = self.pool.placed()
                self.counted = self.read_ledger()
                self.stopped.wait(PING_S)

    def read_ledger(self) -> dict[str, dict[str, Any]]:
        if self.pool.ledger is None:
            return {}
        try:
            return ray.get(self.pool.ledger.snapshot.remote(), timeout=PING_S)
        except Exception:  # noqa: BLE001 - busy or going: the last reading stands
            return self.counted

    def answers(self) -> bool:
        return ray_lease.gcs_answers(self.gcs, PING_S)

    def stop(self) -> None:
        self.stopped.set()


def gcs_address() -> str | None:
    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - an older Ray: no probe, Ray's own timeouts apply
        return None


class RayExecutor:
    """Episodes to live workers, by (domain, task, trial) so a group's modes share one memo."""

    def __init__(self, pool: Pool, placement_timeout: float,
                 on_status: Callable[[str], None] = lambda text: None):
        self.pool = pool
        self.timeout = placement_timeout
        self.on_status = on_status
        self.owner: dict[Group, int] = {}
        self.load = [0] * pool.n
        self.in_flight: dict[Any, tuple[EpisodeKey, int, str]] = {}
        self.runs: dict[str, int] = {}
        """Times each episode was submitted: its attempts' ids in the ledger."""
        self.unfinished: dict[str, list[Any]] = {}
        """Episode id → the attempts this run lost of it (``None``: nothing counted), until a
        run of it finishes: what ``lost_attempts.jsonl`` holds of this run at a stop."""
        self.recorded: list[str] = []
        """Attempts that came back since the batch loop last asked: their records are appended
        by the time it asks again, and only then does the journal say so (``drop``)."""
        self.stalled: str | None = None
        self.drain_until = 0.0
        self.shown: str | None = None
        self.watch = ClusterWatch(pool, gcs_address())
        self.check()

    # ---- episodes ----------------------------------------------------------------------------

    def submit(self, key: EpisodeKey, artifacts: list[Artifact]) -> bool:
        if self.stalled:
            return False
        pool = self.pool
        group = (key.domain, key.task_id, key.trial)
        w = self.owner.get(group)
        if w is None or pool.workers[w].state != "alive":
            free = [i for i in pool.alive() if self.load[i] < pool.slots]
            if not free:
                return False
            w = self.owner[group] = min(free, key=self.load.__getitem__)
        if self.load[w] >= pool.slots:
            return False
        self.runs[key.id()] = self.runs.get(key.id(), 0) + 1
        attempt = f"{key.id()}#{self.runs[key.id()]}"
        self.in_flight[pool.workers[w].handle.run.remote(key, artifacts, attempt)] = (key, w, attempt)
        self.load[w] += 1
        return True

    def wait(self) -> list[Outcome]:
        """Outcomes of finished episodes; ``[]`` when none is in flight and a worker is free
        again; ``Stalled`` once a stopped run has no episode left running."""
        self.settle()
        while True:
            self.check()
            if self.watch.head_lost:
                if self.in_flight:  # their last counts, as lost attempts; then the stop
                    return self.lost_with_the_head()
                raise Stalled(self.stalled or self.head_lost())
            if self.stalled and (not self.in_flight or time.monotonic() > self.drain_until):
                raise Stalled(self.stalled)
            if not self.in_flight and self.pool.alive() and not self.stalled:
                return []
            refs = list(self.in_flight)
            if not refs:
                time.sleep(PING_S / 4)
                continue
            done, _ = ray.wait(refs, num_returns=1, timeout=PING_S)
            if done:
                return [self.outcome(ref) for ref in done]

    def outcome(self, ref: Any) -> Outcome:
        key, w, attempt = self.in_flight.pop(ref)
        self.load[w] -= 1
        ledger = self.pool.ledger
        try:
            record, made, aborted, where = ray.get(ref)
            if ledger is not None:
                self.recorded.append(attempt)  # its record counts its calls, once appended
            if record is not None:
                self.unfinished.pop(key.id(), None)  # its record holds its lost attempts
            return Outcome(key=key, record=record, artifacts=made, aborted=aborted, where=where)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
            # Its worker (or node) was lost: the batch loop runs the episode again. The worker
            # is pinged until it answers (Ray restarts it) or is known dead.
            worker = self.pool.workers[w]
            if worker.state == "alive":
                worker.set("down")
                worker.next_ping = 0.0
            counted = self.counted(attempt)
            self.unfinished.setdefault(key.id(), []).append(counted)
            return Outcome(key=key, record=None, lost=(type(exc).__name__, str(exc)),
                           attempt=counted, where=worker.holder)

    def counted(self, attempt: str) -> Any:
        """The lost attempt's calls as the ledger counted them (None: no ledger, or no call)."""
        if self.pool.ledger is None:
            return None
        try:
            tally = ray.get(self.pool.ledger.take.remote(attempt), timeout=5 * PING_S)
        except (ray.exceptions.RayError, TimeoutError):
            return self.unreachable([attempt])[attempt]  # the ledger went with the head
        return lost_attempt(attempt, tally, journal=self.pool.journal) if tally else None

    def settle(self) -> None:
        """The attempts that came back, whose records the batch loop has appended since: the
        journal says so (from here, so it holds even where the ledger is gone), then the
        ledger forgets them."""
        done, self.recorded = self.recorded, []
        call_ledger.mark_recorded(self.pool.journal, done)
        if not self.watch.head_lost:
            for attempt in done:
                self.pool.ledger.drop.remote(attempt)

    def unreachable(self, attempts: list[str]) -> dict[str, Any]:
        """The calls of ``attempts`` once the ledger is gone: from its journal (every call
        that left) or, where that cannot be read, from its last reading, marked ``at_least``."""
        journal = replay(self.pool.journal) if self.pool.journal else None
        if journal is not None:
            return {a: lost_attempt(a, journal[a], journal=self.pool.journal) if a in journal else None
                    for a in attempts}
        return {a: lost_attempt(a, self.watch.counted.get(a) or {}, at_least=True, journal=self.pool.journal)
                for a in attempts}

    # ---- worker health -----------------------------------------------------------------------

    def check(self) -> None:
        """Read answered pings, send due ones, stop the run on a worker unplaced for too long."""
        now = time.monotonic()
        if self.watch.head_lost:
            return
        placed, self.watch.placed = self.watch.placed, None
        if placed is not None:
            for i, w in enumerate(self.pool.workers):
                if i in placed:
                    w.unplaced_since = None
                elif w.unplaced_since is None:
                    w.unplaced_since = now
        for i, w in enumerate(self.pool.workers):
            if w.ping is not None and ray.wait([w.ping], timeout=0)[0]:
                self.heard(w)
            if w.state not in ("starting", "down") or self.stalled:
                continue
            if w.ping is None and now >= w.next_ping:
                w.ping = w.handle.ready.remote()
                w.next_ping = now + PING_S
            alive = f"{len(self.pool.alive())} of {self.pool.n} workers alive; {cluster_now()}"
            if w.unplaced_since is not None and now - w.unplaced_since > self.timeout:
                self.stop(f"Ray worker {i} could not be placed within {self.timeout:g} s ({alive})")
            elif now - w.since > max(ANSWER_S, self.timeout):
                self.stop(f"Ray worker {i} was placed but did not answer within "
                          f"{max(ANSWER_S, self.timeout):g} s ({alive})")
        if not self.pool.alive() and all(w.state == "dead" for w in self.pool.workers) \
                and not self.stalled:
            self.stop(f"every Ray worker died ({RESTARTS} restarts each used up; {cluster_now()})")
        self.status()

    def heard(self, w: Worker) -> None:
        ref, w.ping = w.ping, None
        try:
            holder = ray.get(ref)
        except ray.exceptions.ActorUnavailableError:
            return  # temporary (restarting, unreachable): asked again in PING_S
        except ray.exceptions.ActorDiedError as exc:
            if w.holder is None and getattr(exc, "actor_init_failed", False):
                raise  # the worker cannot be built at all (bad setup): not a lost node
            self.pool.forget(w)
            try:
                ray.kill(w.handle, no_restart=True)  # frees its CPU wherever Ray still holds it
            except Exception:  # noqa: BLE001 - already gone
                pass
            w.set("dead")
            return
        if w.holder is not None and holder != w.holder:
            self.pool.forget(w)  # a restarted worker: its old incarnation's slots go back
        w.holder = holder
        w.set("alive")

    def lost_with_the_head(self) -> list[Outcome]:
        """The episodes in flight when the head was lost, as lost attempts with the calls the
        ledger counted of them (:meth:`unreachable`): they are not recorded (their workers
        depended on the head's actors) and run again on resume."""
        running = list(self.in_flight.items())
        counted = self.unreachable([attempt for _, (_, _, attempt) in running]) if self.pool.ledger else {}
        outcomes = []
        for ref, (key, w, attempt) in running:
            del self.in_flight[ref]
            self.load[w] -= 1
            outcomes.append(Outcome(key=key, record=None, where=self.pool.workers[w].holder,
                                    lost=("HeadLost", "the Ray head node was lost"),
                                    attempt=counted.get(attempt)))
            self.unfinished.setdefault(key.id(), []).append(counted.get(attempt))
        self.stop(self.head_lost())
        return outcomes

    def head_lost(self) -> str:
        """The line that ends a run whose head node is gone. Its counts are the folder's: every
        episode this run lost an attempt of and did not finish since — those in flight at the
        end, and those whose worker went down with the head before the probe saw it — with
        their calls, as ``lost_attempts.jsonl`` holds them (``at least``, where only the ledger's
        last reading was left). They run again on resume."""
        attempts = [a for runs in self.unfinished.values() for a in runs]
        known = [a for a in attempts if a is not None]
        calls = sum(a.calls + a.in_flight_calls for a in known)
        flying = sum(a.in_flight_calls for a in known)
        flying_usd = sum(a.in_flight_cost_usd for a in known)
        short = any(a.at_least for a in known) or (self.pool.ledger is not None and not self.pool.journal)
        counted = (f"; their calls: {'at least ' if short else ''}{calls}"
                   f"{in_flight_words(flying, flying_usd)}, in lost_attempts.jsonl"
                   if attempts else "")
        return (f"lost the Ray head node (nothing answers at its GCS address {self.watch.gcs} "
                f"for {HEAD_MISSES * PING_S:g} s: the cluster is gone); {len(self.unfinished)} episode(s) "
                f"with a lost attempt were not recorded{counted}")

    def stop(self, reason: str) -> None:
        self.stalled = reason
        self.drain_until = time.monotonic() + self.timeout

    def status(self) -> None:
        text = f"workers {len(self.pool.alive())}/{self.pool.n} alive"
        if text != self.shown:
            self.shown = text
            self.on_status(text)

    def abort(self, cause: Any) -> None:
        for i in self.pool.alive():
            self.pool.workers[i].handle.abort.remote(cause.reason, cause.credentials)

    def close(self, finished: bool) -> None:
        # At the end, time for every worker to remove its containers and save their logs; on
        # Ctrl-C, an error or a stop, a short wait and then the workers are ended regardless.
        self.watch.stop()
        try:
            self.settle()
            if self.watch.head_lost:
                forget_cluster()  # nothing to close, and every call to the cluster would block
                return
            self.pool.close(timeout_s=120.0 if finished else 10.0)
        finally:
            # with episodes in flight (Ctrl-C, an error) their calls are the next run's to count
            call_ledger.release(self.pool.journal, counted=not self.in_flight)


HEAD_LOST = False
"""Set once this process's cluster lost its head: nothing may call it again."""


def forget_cluster() -> None:
    """The head is gone: skip Ray's shutdown at exit (it would wait for the dead GCS)."""
    import atexit

    from ray._private import worker as ray_worker

    global HEAD_LOST
    HEAD_LOST = True
    atexit.unregister(ray_worker.shutdown)
