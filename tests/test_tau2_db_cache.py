"""The copy-on-read DB cache must be invisible: every reference solution gives the same tool outputs
and the same DB hash (ours against τ²'s own) as τ²'s constructor, and the shared parse never
changes."""

from __future__ import annotations

import copy
import pickle

import pytest

from envs.tau2 import db_cache


def _replay(env, task) -> list[str]:
    """τ²'s gold replay (as in its evaluator): initial state, then the reference actions."""
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state else None,
        initialization_actions=state.initialization_actions if state else None,
        message_history=(state.message_history if state and state.message_history else []),
    )
    outputs = []
    for action in task.evaluation_criteria.actions or []:
        try:
            outputs.append(repr(env.make_tool_call(tool_name=action.name, requestor=action.requestor,
                                                   **action.arguments)))
        except Exception as exc:  # noqa: BLE001 - the same error must come from both
            outputs.append(f"error: {exc}")
    return outputs


SAMPLE = 6
"""The default suite replays every ``SAMPLE``-th reference solution of each domain (a whole
domain takes half a minute); the slow suite replays all of them."""


@pytest.mark.parametrize("domain", db_cache.CACHED_DOMAINS)
@pytest.mark.parametrize("every", [pytest.param(SAMPLE, id="sample"),
                                   pytest.param(1, id="all", marks=pytest.mark.slow)])
def test_every_reference_solution_leaves_the_same_db(domain, every):
    from tau2.registry import registry

    db_cache.install()
    cached = registry.get_env_constructor(domain)
    original = db_cache._original(domain)
    assert getattr(cached, "evr_db_cache", False) and cached is not original
    pristine = original().get_db_hash()
    tasks = [t for t in registry.get_tasks_loader(domain)() if t.evaluation_criteria
             and t.evaluation_criteria.actions][::every]
    assert tasks
    writes = 0
    for task in tasks:
        plain_env, cached_env = original(), cached()
        assert isinstance(cached_env.tools.db.users, db_cache.CopyOnRead)
        assert cached_env.tools.get_db_hash.func is db_cache.db_hash  # τ²'s hash vs. ours below
        assert _replay(cached_env, task) == _replay(plain_env, task), task.id
        assert cached_env.get_db_hash() == plain_env.get_db_hash(), task.id
        writes += plain_env.get_db_hash() != pristine
    assert writes > 0, "no reference solution changed the DB: the comparison proved nothing"
    # Hundreds of writes through clones later, the shared parse is still the benchmark's DB
    # (hashed by τ² from the entries themselves, not from the cached JSON).
    from tau2.utils import get_dict_hash

    fresh = cached()
    assert get_dict_hash(fresh.tools.db.model_dump()) == pristine == fresh.get_db_hash()


def test_a_write_through_one_clone_is_invisible_to_the_next():
    db_cache.install()
    first, second = db_cache.clone_db("airline"), db_cache.clone_db("airline")
    key = next(iter(first.reservations))
    first.reservations[key].status = "cancelled"
    first.users.pop(next(iter(first.users)))
    assert second.reservations[key].status != "cancelled"
    assert len(second.users) == len(first.users) + 1
    assert first.get_hash() != second.get_hash()
    # Copies and pickles carry the clone's current entries as plain dicts.
    for dup in (copy.deepcopy(first), pickle.loads(pickle.dumps(first))):
        assert type(dup.reservations) is dict and dup.get_hash() == first.get_hash()


def test_domains_without_dict_tables_keep_tau2s_constructor():
    assert db_cache.clone_db("telecom") is None


def test_the_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setenv(db_cache.OFF_VAR, "0")
    assert not db_cache.enabled()
    assert db_cache.install() == []


def test_per_process_caches_compute_once_under_a_stampede():
    import threading
    import time

    from envs.tau2.tasks import once_per_process

    calls = []

    @once_per_process
    def parse(domain):
        calls.append(domain)
        time.sleep(0.05)  # long enough for every thread to arrive before the first returns
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(parse("airline"))) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["airline"] and len({id(r) for r in results}) == 1


def test_the_agents_tool_objects_are_built_once_per_domain():
    from envs.tau2 import tasks

    tools, schemas = tasks.agent_tools("retail")
    assert tasks.agent_tools("retail")[0] is tools
    assert [s["function"]["name"] for s in schemas] == [t.name for t in tools]
    assert tasks.policy_and_tools("retail")[1] == schemas
