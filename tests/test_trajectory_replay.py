"""Recorded τ² conversations replayed through ``--mode direct`` give τ²'s reward, breakdown and
requests.

The recordings are made here, by τ²'s own runner (``run_task``: its LLM agent, user simulator,
orchestrator and evaluator) with scripted models that talk beside tool calls, call several tools
at once, get arguments wrong, ask and get told to stop, stop early and transfer to a human
(``testkit.tau2_recorder``), and are kept in τ²'s results shape. The runtime then replays each one
turn by turn (``testkit.trajectory_replay``): every request its executor and user model send
must hold the history τ²'s agent and user would have sent, and the episode must score the
recorded reward with the recorded breakdown, which τ²'s own re-evaluation reproduces too.
"""

from __future__ import annotations

import pytest

from envs.base import TaskSelection
from envs.tau2 import Tau2Environment
from envs.tau2 import tasks as tau2_tasks
from runtime.batch.threads import run_in_threads
from runtime.episode.services import Services
from runtime.episode.spec import RunSpec
from runtime.llm.layer import ModelLayer, ModelSpec
from runtime.folder.store import RunStore
from testkit.tau2_recorder import record_many
from testkit.trajectory_replay import TrajectoryReplay, simulations


def _replay(tmp_path, domain: str, results: dict) -> tuple[list, TrajectoryReplay, list]:
    sims = simulations(results)
    replay = TrajectoryReplay(domain, {(s.task_id, 0): s for s in sims})
    spec = ModelSpec(model=replay.model_name(f"replay-{domain}"))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    run = RunSpec(run_id=f"replay-{domain}", env="tau2", domain=domain, task_ids=[s.task_id for s in sims],
                  modes=["direct"], models=layer.specs, planner="none", concurrency=2)
    records = run_in_threads(run, Services(Tau2Environment(), layer, lambda m: None), RunStore(tmp_path / domain))
    return records, replay, sims


def _check(tmp_path, domain: str, task_ids: list[str], seed: int) -> dict[str, int]:
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    Tau2Environment()  # τ²'s runner builds its envs from the same parsed DBs
    results = record_many(domain, task_ids, seed)
    records, replay, sims = _replay(tmp_path, domain, results)
    assert not replay.mismatches, f"{len(replay.mismatches)} requests differ; first: {replay.mismatches[0]}"
    by_task = {r.key.task_id: r for r in records}
    assert sorted(by_task) == sorted(task_ids)
    rewards = []
    for sim in sims:
        record = by_task[sim.task_id]
        assert record.status == "ok", record.error
        recorded = sim.reward_info
        breakdown = {getattr(k, "value", k): v for k, v in (recorded.reward_breakdown or {}).items()}
        assert record.score == recorded.reward, (sim.task_id, record.breakdown, breakdown)
        assert record.breakdown == breakdown, sim.task_id
        again = evaluate_simulation(simulation=sim, task=tau2_tasks.task(domain, sim.task_id),
                                    evaluation_type=EvaluationType.ALL, solo_mode=False, domain=domain)
        assert again.reward == recorded.reward, sim.task_id
        assert len(record.messages) == len(sim.messages), sim.task_id
        rewards.append(recorded.reward)
    # the recordings are not all clean: wrong arguments, early stops and transfers fail tasks
    return {"conversations": len(sims), "requests": replay.checked, "passed": sum(r == 1.0 for r in rewards),
            "parallel": sum(1 for s in sims for m in s.messages if m.role == "assistant" and len(m.tool_calls or []) > 1),
            "talking": sum(1 for s in sims for m in s.messages if m.role == "assistant" and m.tool_calls and m.content)}


def _ids(domain: str, n: int | None) -> list[str]:
    """``n`` tasks spread over the split (None: all of them, those without actions included)."""
    ids = tau2_tasks.select(TaskSelection(domain=domain, split="base"))
    return ids if n is None else ids[:: max(1, len(ids) // n)][:n]


def test_replayed_conversations_match_tau2_sample(tmp_path):
    counts = _check(tmp_path, "airline", _ids("airline", 12), seed=1)
    assert counts["conversations"] == 12 and counts["requests"] > 40
    assert counts["talking"] and counts["parallel"] and 0 < counts["passed"] < 12


@pytest.mark.slow
@pytest.mark.parametrize("domain,n", [("airline", None), ("retail", 60)])
def test_replayed_conversations_match_tau2(tmp_path, domain, n):
    """Every airline task (50) and 60 retail tasks: 110 conversations."""
    ids = _ids(domain, n)
    counts = _check(tmp_path, domain, ids, seed=7)
    assert counts["conversations"] == len(ids) >= 50
    assert counts["talking"] and counts["parallel"] and 0 < counts["passed"] < len(ids)
