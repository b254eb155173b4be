"""An assistant turn keeps its text AND its tool calls, both ways through the τ² conversion.

τ²'s own agent keeps both ("I can see you have 5 reservations. Let me check…" + five calls): the
text stays in every later request the model receives and counts for τ²'s communicate check. The
scripted model here (``testkit.gold.GoldReplay(talk=True)``) speaks beside every tool call and
says the task's ``communicate_info`` only beside its last call, so dropping the words of a
tool-calling turn costs the reward, not only the history.
"""

from __future__ import annotations

import json

from envs.tau2 import Tau2Environment
from runtime.batch.threads import run_in_threads
from runtime.episode.services import Services
from runtime.episode.spec import RunSpec
from runtime.llm.layer import ModelLayer, ModelSpec
from runtime.folder.store import RunStore
from testkit.gold import GoldReplay

TASKS = {"airline": ["3", "14"], "retail": ["2"]}
"""Tasks whose reward needs ``communicate_info`` said, with reference actions to speak beside."""


def test_from_chat_and_to_chat_keep_text_beside_tool_calls():
    from envs.tau2.messages import from_chat, to_chat

    reply = {"role": "assistant", "content": "You have 5 reservations. Let me check them.",
             "tool_calls": [{"id": f"call_{i}", "type": "function",
                             "function": {"name": "get_reservation_details",
                                          "arguments": json.dumps({"reservation_id": r})}}
                            for i, r in enumerate(["AB12CD", "EF34GH"])]}
    message = from_chat(reply, "assistant")
    assert message.content == reply["content"]
    assert [tc.arguments for tc in message.tool_calls] == [{"reservation_id": "AB12CD"},
                                                            {"reservation_id": "EF34GH"}]
    [back] = to_chat([message])
    assert back["content"] == reply["content"]
    assert [tc["function"] for tc in back["tool_calls"]] == [tc["function"] for tc in reply["tool_calls"]]
    # τ²'s to_litellm_messages sends the call's name beside "function" too
    assert [tc["name"] for tc in back["tool_calls"]] == ["get_reservation_details"] * 2


def _run(tmp_path, domain: str, ids: list[str]):
    model = GoldReplay(talk=True).model_name(f"talking-{domain}")
    spec = ModelSpec(model=model)
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    seen: list[dict] = []
    layer.observers.append(lambda purpose, request: seen.append(request) if purpose == "executor" else None)
    run = RunSpec(run_id=f"talk-{domain}", env="tau2", domain=domain, task_ids=ids, modes=["direct"],
                  models=layer.specs, planner="none", concurrency=1)
    records = run_in_threads(run, Services(Tau2Environment(), layer, lambda m: None),
                             RunStore(tmp_path / domain))
    return records, seen


def test_a_model_that_talks_while_calling_tools_keeps_its_words_and_its_reward(tmp_path):
    for domain, ids in TASKS.items():
        records, requests = _run(tmp_path, domain, ids)
        assert [r.status for r in records] == ["ok"] * len(ids), [r.error for r in records]
        for record in records:
            talking = [m for m in record.messages
                       if m["role"] == "assistant" and m.get("tool_calls") and m.get("content")]
            assert talking, f"{domain}/{record.key.task_id}: the recorded turns lost their words"
            # the communicate check passes only because the text beside the last call was kept
            assert record.breakdown.get("COMMUNICATE") == 1.0, (domain, record.key.task_id, record.breakdown)
            assert record.score == 1.0, (domain, record.key.task_id, record.breakdown)
        # every request after a talking turn shows the model its own words beside its calls
        later = [req for req in requests if any(m.get("role") == "tool" for m in req["messages"])]
        assert later
        for req in later:
            spoken = [m for m in req["messages"] if m.get("role") == "assistant" and m.get("tool_calls")]
            assert spoken and all((m.get("content") or "").strip() for m in spoken)
