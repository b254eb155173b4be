"""Replaying τ²'s reference actions through the runtime's executor scores 1.0; dropping the last
write scores 0.0. Proves the executor path, τ²'s orchestrator and τ²'s evaluator agree."""

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
from testkit.gold import GoldReplay, last_state_changing_write

DOMAINS = ("airline", "retail", "telecom")


def _with_actions(domain: str) -> list[str]:
    ids = tau2_tasks.select(TaskSelection(domain=domain, split="base"))
    return [i for i in ids if (tau2_tasks.task(domain, i).evaluation_criteria.actions or [])]


def _with_write(domain: str, limit: int | None = None) -> list[str]:
    """Tasks with a reference write that changes the end state (the sabotage drops the last)."""
    found = []
    candidates = _with_actions(domain)
    if limit:  # spread a small sample over the task list
        candidates = candidates[::3] + [i for i in candidates if i not in candidates[::3]]
    for i in candidates:
        if last_state_changing_write(domain, tau2_tasks.task(domain, i)) is not None:
            found.append(i)
            if limit and len(found) == limit:
                break
    return found


def _replay(tmp_path, domain: str, task_ids: list[str], gold: GoldReplay, name: str) -> dict[str, float]:
    model = gold.model_name(name)
    spec = ModelSpec(model=model)
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    env = Tau2Environment()
    spec = RunSpec(run_id=name, env=env.name, domain=domain, task_ids=task_ids, modes=["direct"],
                   models=layer.specs, planner="none", concurrency=2)
    records = run_in_threads(spec, Services(env, layer, lambda m: None), RunStore(tmp_path / name))
    errors = [r for r in records if r.status == "error"]
    assert not errors, errors[0].error
    assert len(records) == len(task_ids)
    return {r.key.task_id: r.score for r in records}


def _sample(ids: list[str], n: int) -> list[str]:
    return ids[:: max(1, len(ids) // n)][:n]


@pytest.mark.parametrize("domain", DOMAINS)
def test_gold_replay_sample_scores_one(tmp_path, domain):
    ids = _sample(_with_actions(domain), 4)
    scores = _replay(tmp_path, domain, ids, GoldReplay(), f"gold-sample-{domain}")
    assert scores == {i: 1.0 for i in ids}


@pytest.mark.parametrize("domain", DOMAINS)
def test_dropping_last_write_scores_zero_sample(tmp_path, domain):
    ids = _with_write(domain, limit=3)
    scores = _replay(tmp_path, domain, ids, GoldReplay(drop_last_write=True), f"sabotage-sample-{domain}")
    assert scores == {i: 0.0 for i in ids}


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_gold_replay_every_task_scores_one(tmp_path, domain):
    ids = _with_actions(domain)
    assert len(ids) >= 40
    scores = _replay(tmp_path, domain, ids, GoldReplay(), f"gold-{domain}")
    failing = {i: s for i, s in scores.items() if s != 1.0}
    assert not failing, f"{len(failing)} of {len(ids)} {domain} tasks did not score 1.0: {failing}"


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_dropping_last_write_scores_zero_every_task(tmp_path, domain):
    ids = _with_write(domain)
    scores = _replay(tmp_path, domain, ids, GoldReplay(drop_last_write=True), f"sabotage-{domain}")
    passing = {i: s for i, s in scores.items() if s != 0.0}
    assert not passing, f"{len(passing)} of {len(ids)} sabotaged {domain} tasks still scored: {passing}"


def test_episodes_that_differ_only_in_strategy_keep_their_own_place():
    # An ablation runs refine once per strategy, concurrently: one episode's first turn must not
    # rewind another's script (it made the user ask "what next?" after the task was done).
    from testkit.gold import STOP

    gold, task = GoldReplay(), "create_task_1"
    first = [{"role": "system", "content": "policy"}, {"role": "user", "content": "please"}]
    second = first + [{"role": "assistant", "content": None},
                      {"role": "tool", "content": "ok", "tool_call_id": "1"}]
    user_turn = [{"role": "system", "content": "you are a user"}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": "done"}]

    def ask(strategy: str, purpose: str, messages: list) -> dict:
        context = {"domain": "mock", "task_id": task, "trial": 0, "mode": "refine",
                   "strategy": strategy, "purpose": purpose}
        return gold({"messages": messages}, context)

    assert ask("anti-leak", "executor", first)["tool_calls"]
    assert not ask("anti-leak", "executor", second).get("tool_calls")  # the closing words
    assert ask("none", "executor", first)["tool_calls"]  # the other strategy's episode starts
    assert ask("anti-leak", "user", user_turn)["content"] == STOP
