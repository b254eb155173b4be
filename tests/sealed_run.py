"""Shared by the sealed critique's environment tests (``test_sealed_tau3``,
``test_sealed_toolsandbox``): a refine run of ``sealed`` with scripted roles, and its checks —
every episode completes, its record carries the channel, and no reviser request holds a
supervision-only value of its task."""

from __future__ import annotations

import json


def run_sealed(tmp_path, env, domain: str, task_ids: list[str], act, name: str):
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services, planner_factory
    from runtime.episode.spec import RunSpec
    from runtime.folder.store import RunStore
    from runtime.llm.layer import ModelLayer, ModelSpec
    from testkit.roles import ScriptedRoles

    sent: list[tuple[str, dict]] = []
    spec = ModelSpec(model=ScriptedRoles(act=act).model_name(name))
    layer = ModelLayer({role: spec for role in ("model", "critic_model", "judge_model", "auditor_model", "user_model")})
    layer.observers.append(lambda purpose, request: sent.append((purpose, request)))
    run_spec = RunSpec(run_id=name, env=env.name, domain=domain, task_ids=task_ids, modes=["refine"],
                       strategies=["sealed"], models=layer.specs, planner="llm", concurrency=2)
    records = run_in_threads(run_spec, Services(env, layer, planner_factory("llm")), RunStore(tmp_path / name))
    return records, sent


def check(env, domain: str, records, sent) -> None:
    assert records and all(r.status == "ok" for r in records), [r.error for r in records]
    for r in records:
        assert r.channel and 0 < r.channel["used_bits"] <= r.channel["max_bits"]
        assert r.critique["rationale"]
    revisions = [json.dumps(request["messages"]) for purpose, request in sent if purpose == "reviser"]
    assert len(revisions) == len(records)
    for r in records:
        view, supervision = env.load(domain, r.key.task_id)
        hidden = supervision.supervision_only_values(view.model_copy(update={"opening_request": r.opening_request}))
        assert not [v for v in hidden for text in revisions if v in text]
