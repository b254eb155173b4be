"""One episode: its graph run on the run's services, ending in a record and what it made.

``run_episode`` is the unit every executor runs — a thread of this process or a Ray worker —
so each of them runs the same experiment; it writes nothing.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from critique.provenance import record_audit
from critique.strategies import DEFAULT_STRATEGY, STRATEGIES
from runtime.episode.artifacts import Artifact, ArtifactMemo
from runtime.episode.graph import EpisodeContext, EpisodeState, episode_graph
from runtime.episode.services import Services
from runtime.episode.spec import RunSpec, episode_seed
from runtime.episode.failures import classify
from runtime.llm.layer import Meter
from runtime.folder.records import EpisodeKey, EpisodeRecord, StageError


def run_episode(spec: RunSpec, services: Services, key: EpisodeKey, artifacts: ArtifactMemo,
                sink: Any = None) -> tuple[EpisodeRecord, list[Artifact]]:
    """The episode ``key`` of ``spec``: its record, and the shared artifacts it made; ``sink``
    is told of each model call as it happens (``runtime.llm.layer.Meter.sink``)."""
    started = now()
    meter = Meter(sink=sink)
    seed = episode_seed(spec.seed, key, spec.seeding)
    ctx = EpisodeContext(key=key, seed=seed, env=services.env, layer=services.layer,
                         artifacts=artifacts, planner_name=spec.planner,
                         make_planner=services.make_planner, meter=meter, max_steps=spec.max_steps,
                         strategy=STRATEGIES[key.strategy or DEFAULT_STRATEGY], sealed=spec.sealed,
                         judge=spec.judge and key.mode != "direct", auditor=spec.auditor,
                         refresh_cache=key.id() in spec.refresh, limits=spec.limits,
                         started=time.perf_counter())
    try:
        state: EpisodeState = episode_graph().invoke({}, {"recursion_limit": 50}, context=ctx)
    except Exception as exc:  # noqa: BLE001 - the graph itself failing is recorded, not raised
        state = {"error": StageError(stage="graph", type=type(exc).__name__, message=str(exc)[:2000],
                                     **classify(exc))}
    return record_of(spec, key, seed, state, meter, started), list(state.get("made", []))


def record_of(spec: RunSpec, key: EpisodeKey, seed: int, state: EpisodeState, meter: Meter,
              started: str) -> EpisodeRecord:
    view = state.get("view")
    critic = state.get("critic")
    trajectory = state.get("trajectory")
    score = state.get("score")
    error = state.get("error")
    return EpisodeRecord(
        run_id=spec.run_id,
        key=key,
        record_id=key.id(),
        status="error" if error else "ok",
        seed=seed,
        opening_request=view.opening_request if view else None,
        p0=state["p0"].model_dump() if "p0" in state else None,
        critique=critic.critique.model_dump() if critic else None,
        guard={**critic.guard.model_dump(), "critic_attempts": critic.attempts} if critic else None,
        critique_note=critic.note if critic else None,
        channel=critic.channel if critic else None,
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
        finish_reasons=meter.finish_reasons,
        timings_s=state.get("timings", {}),
        reused=state.get("reused", []),
        error=error,
        started_at=started,
        finished_at=now(),
    )


def lost_record(spec: RunSpec, key: EpisodeKey, error_type: str, message: str,
                attempts: int = 1) -> EpisodeRecord:
    """The record of an episode whose process died under it every time it ran: an infrastructure
    error (``--retry-errors`` reruns it)."""
    stamp = now()
    said = f"its worker was lost {attempts} time(s); last: " if attempts > 1 else ""
    return EpisodeRecord(run_id=spec.run_id, key=key, record_id=key.id(), status="error",
                         seed=episode_seed(spec.seed, key, spec.seeding),
                         error=StageError(stage="worker", type=error_type, kind="infrastructure",
                                          cause="worker_lost",
                                          message=(said + " ".join(message.split()))[:2000]),
                         started_at=stamp, finished_at=stamp)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

