"""The batch loop's part in losing a worker, with an executor double that loses episodes on
purpose (it stands in for a Ray worker whose node dies; no model, no environment): a lost
episode runs again, seeded with the artifacts returned since, and becomes an infrastructure
error only after ``LOST_ATTEMPTS`` losses; an executor that cannot place its workers stops the
run resumably. The real cluster cases are in ``tests/test_ray_cluster.py``."""

from __future__ import annotations

from collections import Counter

import pytest

from runtime.batch import Outcome, RunStopped, Stalled, run_batch
from runtime.batch.core import LOST_ATTEMPTS
from runtime.episode.spec import ModelSpec, RunSpec
from runtime.folder.records import EpisodeRecord
from runtime.folder.store import RunStore


def spec(**extra) -> RunSpec:
    model = ModelSpec(model="double/none")
    return RunSpec(run_id="lost", env="tau2", domain="mock", task_ids=["a", "b"], modes=["plan-first", "refine"],
                   models={r: model for r in ("model", "critic_model", "judge_model", "user_model")},
                   concurrency=2, **extra)


def ok(key) -> EpisodeRecord:
    return EpisodeRecord(run_id="lost", key=key, record_id=key.id(), status="ok", seed=0, score=1.0,
                         started_at="t", finished_at="t")  # an ok episode has its score


class LosingExecutor:
    """Loses each episode named in ``lose`` that many times (as a dead worker would), then runs
    it; the first plan-first episode of a task "makes" its p0 artifact."""

    def __init__(self, lose: dict[str, int], stall_after: int | None = None):
        self.lose = Counter(lose)
        self.stall_after = stall_after
        self.running: list = []
        self.submitted: list[tuple[str, list[str]]] = []
        self.finished = 0

    def submit(self, key, artifacts) -> bool:
        self.submitted.append((key.id(), [a["kind"] for a in artifacts]))
        self.running.append(key)
        return True

    def wait(self) -> list[Outcome]:
        if self.stall_after is not None and self.finished >= self.stall_after:
            raise Stalled("Ray worker 1 could not be placed within 5 s")
        key = self.running.pop(0)
        if self.lose[key.id()]:
            self.lose[key.id()] -= 1
            return [Outcome(key=key, record=None, lost=("ActorUnavailableError", "node died"))]
        self.finished += 1
        made = [{"kind": "p0", "key": {"domain": key.domain, "task_id": key.task_id, "trial": key.trial},
                 "value": "plan"}] if key.mode == "plan-first" else []
        return [Outcome(key=key, record=ok(key), artifacts=made)]

    def abort(self, cause) -> None:
        pass

    def close(self, finished: bool) -> None:
        self.closed = finished


def test_a_lost_episode_runs_again_with_the_artifacts_returned_since(tmp_path):
    s = spec()
    refine_a = next(k for k in s.keys() if k.task_id == "a" and k.mode == "refine").id()
    executor = LosingExecutor({refine_a: LOST_ATTEMPTS - 1})
    ids = run_batch(s, RunStore(tmp_path), lambda spec, n: executor)
    written = RunStore(tmp_path).records()
    assert sorted(ids) == sorted(r.record_id for r in written) == sorted(k.id() for k in s.keys())
    assert all(r.status == "ok" for r in written), [r.error for r in written]
    tries = [artifacts for rid, artifacts in executor.submitted if rid == refine_a]
    assert len(tries) == LOST_ATTEMPTS
    assert tries[-1] == ["p0"], "the re-run must be seeded with the p0 returned meanwhile"
    assert len(RunStore(tmp_path).records()) == 4, "no duplicate record"


def test_an_episode_lost_every_time_is_an_infrastructure_error_saying_why(tmp_path):
    s = spec()
    victim = s.keys()[0].id()
    executor = LosingExecutor({victim: LOST_ATTEMPTS + 5})
    run_batch(s, RunStore(tmp_path), lambda spec, n: executor)
    errors = [r for r in RunStore(tmp_path).records() if r.status == "error"]
    assert [r.record_id for r in errors] == [victim]
    error = errors[0].error
    assert error.kind == "infrastructure" and error.stage == "worker"
    assert error.type == "ActorUnavailableError"
    assert f"lost {LOST_ATTEMPTS} time(s)" in error.message and "node died" in error.message
    assert sum(rid == victim for rid, _ in executor.submitted) == LOST_ATTEMPTS


def test_a_stalled_executor_stops_the_run_resumably(tmp_path):
    s = spec()
    executor = LosingExecutor({}, stall_after=1)
    with pytest.raises(RunStopped, match="could not be placed within 5 s") as stopped:
        run_batch(s, RunStore(tmp_path), lambda spec, n: executor)
    assert stopped.value.cause.credentials is False  # exit 3, not 2
    assert executor.closed is False
    assert len(RunStore(tmp_path).records()) == 1, "what finished is kept; the rest resumes"
    rest = run_batch(s, RunStore(tmp_path), lambda spec, n: LosingExecutor({}))
    assert len(rest) == 3 and len(RunStore(tmp_path).records()) == 4
