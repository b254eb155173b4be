"""Runs a matrix of episodes (task × trial × mode) concurrently and appends their records.

Resumable: episodes whose record already exists in the run folder are skipped. An episode that
fails is recorded as an error with its stage; the run goes on. Ctrl-C stops scheduling; what
finished is already on disk. A failure every episode would repeat (credentials rejected, an
endpoint that stays down) stops the run instead: no episode that ends after it is recorded
(any of them may have been broken by it, even one the environment ended normally), so the same
command resumes them once the cause is fixed.
"""

from __future__ import annotations

import random
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from critique.provenance import record_audit
from critique.strategies import DEFAULT_STRATEGY, STRATEGIES, Strategy
from envs.base import Environment
from runtime.failures import error_kind
from runtime.graph import EpisodeContext, EpisodeState, PlannerFactory, episode_graph
from runtime.llm.layer import Meter, ModelLayer, RunAborted
from runtime.records import EpisodeKey, EpisodeRecord, StageError
from runtime.store import RunStore


MAX_EPISODES = 1_000_000
"""More episodes than any benchmark has; a typo (``--trials 1000000000``) stops here."""


class RunStopped(RuntimeError):
    """The run stopped early because of ``cause``; finished records are saved."""

    def __init__(self, cause: RunAborted):
        super().__init__(str(cause))
        self.cause = cause


def check_size(tasks: int, trials: int, modes: list[str], strategies: int) -> None:
    """Refuse a matrix too large to be meant, before anything is allocated for it."""
    per_task = trials * sum(strategies if m == "refine" else 1 for m in modes)
    if tasks * per_task > MAX_EPISODES:
        raise ValueError(f"{tasks} tasks × {per_task} episodes each is more than "
                         f"{MAX_EPISODES:,} episodes; lower --trials or --tasks")


def trial_seed(seed: int, trial: int) -> int:
    """A per-trial seed derived from the run seed; sent with every request of the trial."""
    return random.Random(f"{seed}:{trial}").randrange(2**31)


@dataclass
class EpisodeMatrix:
    """Every episode of a run — task × trial × mode (× strategy) — with what they share."""

    run_id: str
    env: Environment
    domain: str
    task_ids: list[str]
    modes: list[str]
    trials: int
    seed: int
    layer: ModelLayer
    store: RunStore
    planner_name: str
    make_planner: PlannerFactory
    max_steps: int = 100
    concurrency: int = 4
    retry_errors: bool = False
    strategies: list[Strategy] = field(default_factory=lambda: [STRATEGIES[DEFAULT_STRATEGY]])
    judge: bool = True
    auditor: bool = True
    keys: list[EpisodeKey] = field(default_factory=list)

    refresh: set[str] = field(default_factory=set)
    """Record ids re-run because they errored: their model calls bypass the response cache."""

    def __post_init__(self) -> None:
        check_size(len(self.task_ids), self.trials, self.modes, len(self.strategies))
        model = self.layer.specs["model"].model
        # Task-major order, modes last: an episode's shared p0 is made by the first mode that
        # needs it and the rest of that task's modes follow right behind.
        self.keys = [
            EpisodeKey(env=self.env.name, domain=self.domain, task_id=t, mode=m, model=model,
                       trial=k, strategy=s)
            for t in self.task_ids
            for k in range(self.trials)
            for m in self.modes
            for s in ([x.name for x in self.strategies] if m == "refine" else [""])
        ]


def run_episode(matrix: EpisodeMatrix, key: EpisodeKey) -> EpisodeRecord:
    started = _now()
    meter = Meter()
    seed = trial_seed(matrix.seed, key.trial)
    ctx = EpisodeContext(key=key, seed=seed, env=matrix.env, layer=matrix.layer, store=matrix.store,
                         planner_name=matrix.planner_name, make_planner=matrix.make_planner,
                         meter=meter, max_steps=matrix.max_steps,
                         strategy=STRATEGIES[key.strategy or DEFAULT_STRATEGY],
                         judge=matrix.judge and key.mode != "direct", auditor=matrix.auditor,
                         refresh_cache=key.id() in matrix.refresh)
    try:
        state: EpisodeState = episode_graph().invoke({}, {"recursion_limit": 50}, context=ctx)
    except Exception as exc:  # noqa: BLE001 - the graph itself failing is recorded, not raised
        state = {"error": StageError(stage="graph", type=type(exc).__name__, message=str(exc)[:2000],
                                     kind=error_kind(exc))}
    return _record(matrix, key, seed, state, meter, started)


def _record(matrix: EpisodeMatrix, key: EpisodeKey, seed: int, state: EpisodeState, meter: Meter,
            started: str) -> EpisodeRecord:
    view = state.get("view")
    critic = state.get("critic")
    trajectory = state.get("trajectory")
    score = state.get("score")
    error = state.get("error")
    return EpisodeRecord(
        run_id=matrix.run_id,
        key=key,
        record_id=key.id(),
        status="error" if error else "ok",
        seed=seed,
        opening_request=view.opening_request if view else None,
        p0=state["p0"].model_dump() if "p0" in state else None,
        critique=critic.critique.model_dump() if critic else None,
        guard={**critic.guard.model_dump(), "critic_attempts": critic.attempts} if critic else None,
        provenance=record_audit(view, state.get("supervision"), trajectory),
        p1=state["p1"].model_dump() if "p1" in state else None,
        judge_p0=state["judge_p0"].model_dump() if "judge_p0" in state else None,
        judge_p1=state["judge_p1"].model_dump() if "judge_p1" in state else None,
        score=score.value if score else None,
        score_name=score.name if score else None,
        breakdown=score.breakdown if score else {},
        termination=trajectory.termination if trajectory else None,
        turns=trajectory.turns if trajectory else None,
        messages=trajectory.messages if trajectory else [],
        score_info=score.info if score else {},
        usage=meter.as_dict(),
        malformed=meter.malformed,
        flags=sorted({kind for counts in meter.malformed.values() for kind in counts}),
        timings_s=state.get("timings", {}),
        reused=state.get("reused", []),
        error=error,
        started_at=started,
        finished_at=_now(),
    )


def pending(matrix: EpisodeMatrix) -> list[EpisodeKey]:
    """Episodes without a record (and, with ``retry_errors``, those recorded as errors, whose
    calls will then bypass the response cache)."""
    done = {}
    for record in matrix.store.records():
        done[record.record_id] = record.status
    retried = {k.id() for k in matrix.keys if matrix.retry_errors and done.get(k.id()) == "error"}
    matrix.refresh |= retried
    return [k for k in matrix.keys if k.id() not in done or k.id() in retried]


def run(matrix: EpisodeMatrix, on_done: Callable[[EpisodeRecord], None] = lambda r: None) -> list[EpisodeRecord]:
    """Run every pending episode; returns the records written by this call."""
    todo = pending(matrix)
    written: list[EpisodeRecord] = []
    pool = ThreadPoolExecutor(max_workers=max(1, matrix.concurrency), thread_name_prefix="episode")
    futures: dict[Future, EpisodeKey] = {}
    queue = list(todo)
    try:
        while queue or futures:
            while queue and len(futures) < matrix.concurrency:
                key = queue.pop(0)
                futures[pool.submit(run_episode, matrix, key)] = key
            done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
            for future in done:
                futures.pop(future)
                record = future.result()
                if matrix.layer.aborted:
                    continue  # may have been broken by the fatal failure: left to resume
                matrix.store.append(record)
                written.append(record)
                on_done(record)
            if matrix.layer.aborted:
                raise RunStopped(matrix.layer.aborted)
    except BaseException:
        for future in futures:
            future.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return written


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
