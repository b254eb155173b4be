"""Direct is ``tau2 run --agent llm_agent``: the same requests, rewards and reward breakdowns.

A logging proxy (``testkit.loopback.FaultProxy`` with no fault scheduled) sits in front of the
gold-replaying stub (``bench/stub_server.py``, whose agent talks while it calls tools and whose
user plays its own reference actions on the phone). τ²'s own CLI from this interpreter's venv and
``runtime.validate --mode direct --seeding tau2`` play the same tasks through it; every request
the agent model and the user simulator's model receive must be equal, tool-call ids masked (the
stub draws them at random), seed included.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.loopback import FaultProxy
from tests.conftest import stub_server as load_stub_server

ROOT = Path(__file__).resolve().parents[1]
TAU2_SEED, TAU2_FIRST_TRIAL_SEED = 300, 626729  # τ²'s default --seed and the seed it sends
MOCK_TASKS = ["create_task_1", "update_task_1"]
_IDS = re.compile(r"call_[0-9a-f]{12}")
_MARKER = re.compile(r"\[task [a-z_-]+/(.+?)\]\"")  # in JSON text: the marker ends its message


def _stub_module():
    module = load_stub_server()
    return module


class Stub:
    """The gold stub (or its sabotaged replay) on loopback, behind a logging proxy."""

    def __init__(self, domain: str, ids: list[str], sabotage: bool = False):
        stub = _stub_module()
        self.replay = stub.Replay([domain], ids, sabotage)
        self.server = stub.serve(0, 0.0, [domain], ids, sabotage)
        self.proxy = FaultProxy(f"http://127.0.0.1:{self.server.server_address[1]}", lambda n, b: None)
        self.url = self.proxy.url + "/v1"

    def take(self) -> list[dict]:
        """The request bodies seen since the last call (each with its bytes under ``_raw``)."""
        with self.proxy.lock:
            bodies = [{**r["body"], "_raw": r["raw"]} for r in self.proxy.requests]
            self.proxy.requests.clear()
        return bodies

    def __enter__(self) -> "Stub":
        return self

    def __exit__(self, *exc) -> None:
        self.proxy.close()
        self.server.shutdown()


def tau2_run(stub: Stub, domain: str, ids: list[str], out: Path) -> dict[str, dict]:
    """``tau2 run`` with τ²'s LLM agent and user simulator on the stub: reward info by task."""
    args = json.dumps({"api_base": stub.url, "temperature": 0.0})
    cmd = [str(Path(sys.executable).with_name("tau2")), "run", "--domain", domain, "--agent", "llm_agent",
           "--agent-llm", "openai/stub", "--user-llm", "openai/stub", "--agent-llm-args", args,
           "--user-llm-args", args, "--task-ids", *ids, "--max-concurrency", "1",
           "--seed", str(TAU2_SEED), "--save-to", "tau2", "--results-dir", str(out), "--log-level", "ERROR"]
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-unused-0000", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "HOME": str(out)}
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    sims = json.loads((out / "tau2.json").read_text())["simulations"]
    return {s["task_id"]: s["reward_info"] for s in sims}


def runtime_direct(stub: Stub, domain: str, ids: list[str], out: Path, monkeypatch) -> dict[str, dict]:
    """``runtime.validate --mode direct`` with τ²'s seeding on the stub: records by task."""
    from runtime import validate

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000")
    code = validate.main(["--env", "tau2", "--domain", domain, "--mode", "direct", "--task-ids", ",".join(ids),
                          "--model", "openai/stub", "--api-base", stub.url, "--out", str(out), "--no-cache",
                          "--concurrency", "1", "--seeding", "tau2", "--seed", str(TAU2_SEED), "--no-judge"])
    assert code == 0
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    return {r["key"]["task_id"]: r for r in rows}


def by_task(bodies: list[dict], replay) -> dict[str, list[dict]]:
    """Requests grouped by task, in order, tool-call ids masked. A request names its task by the
    stub's marker; the user's opening request (no marker yet) by its scenario."""
    out: dict[str, list[dict]] = {}
    for body in bodies:
        text = json.dumps(body["messages"], ensure_ascii=False)
        marker = _MARKER.search(text)
        if marker:
            task_id = marker.group(1)
        else:
            task_id = replay.find(body["messages"][0]["content"])[1]
        out.setdefault(task_id, []).append(json.loads(_IDS.sub("call_X", json.dumps(body))))
    return out


def byte_differences(tau2_bodies: list[dict], runtime_bodies: list[dict], replay) -> list[str]:
    """Requests whose bytes differ (tool-call ids masked), as 'task #n', in order: equal JSON is
    not enough for a provider-side cache keyed on the body."""
    ours, theirs = by_task(runtime_bodies, replay), by_task(tau2_bodies, replay)
    return [f"{task_id} #{i}" for task_id in theirs for i, (a, b) in enumerate(zip(theirs[task_id], ours.get(task_id, [])))
            if a["_raw"] != b["_raw"]]


def first_difference(a: list[dict], b: list[dict]) -> str:
    a = [{k: v for k, v in x.items() if k != "_raw"} for x in a]
    b = [{k: v for k, v in y.items() if k != "_raw"} for y in b]
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            detail = ""
            if "messages" in keys:
                pairs = [(p, q) for p, q in zip(x["messages"], y["messages"]) if p != q]
                if pairs:
                    detail = f"\n  tau2 run: {json.dumps(pairs[0][0])[:400]}\n  runtime:  {json.dumps(pairs[0][1])[:400]}"
                else:
                    detail = f" (lengths {len(x['messages'])} vs {len(y['messages'])})"
            return f"request {i} differs in {keys}{detail}"
    return f"{len(a)} requests vs {len(b)}"


def assert_same_requests(tau2_bodies, runtime_bodies, replay, ids) -> dict[str, list[dict]]:
    ours, theirs = by_task(runtime_bodies, replay), by_task(tau2_bodies, replay)
    assert sorted(theirs) == sorted(ids) == sorted(ours)
    for task_id in ids:
        same_json = [{k: v for k, v in b.items() if k != "_raw"} for b in ours[task_id]] == \
            [{k: v for k, v in b.items() if k != "_raw"} for b in theirs[task_id]]
        assert same_json, f"{task_id}: {first_difference(theirs[task_id], ours[task_id])}"
    differ = byte_differences(tau2_bodies, runtime_bodies, replay)
    assert not differ, f"{len(differ)} requests equal as JSON differ in bytes: {differ[:5]}"
    return ours


def test_direct_sends_what_tau2_run_sends_mock(tmp_path, monkeypatch):
    """Agent and user requests equal (system prompts, tool schemas, history with the text beside
    each tool call and τ²'s ``name`` key, temperature, tool choice, seed 626729 from --seed 300)."""
    with Stub("mock", MOCK_TASKS) as stub:
        theirs = tau2_run(stub, "mock", MOCK_TASKS, tmp_path / "tau2")
        tau2_bodies = stub.take()
        ours = runtime_direct(stub, "mock", MOCK_TASKS, tmp_path / "rt", monkeypatch)
        runtime_bodies = stub.take()
        grouped = assert_same_requests(tau2_bodies, runtime_bodies, stub.replay, MOCK_TASKS)
    assert {b["seed"] for b in runtime_bodies} == {TAU2_FIRST_TRIAL_SEED}
    talking_calls = [m for reqs in grouped.values() for b in reqs for m in b["messages"]
                     if m["role"] == "assistant" and m.get("tool_calls") and m.get("content")]
    assert talking_calls and all(tc["name"] == tc["function"]["name"]
                                 for m in talking_calls for tc in m["tool_calls"])
    for task_id in MOCK_TASKS:
        assert ours[task_id]["score"] == theirs[task_id]["reward"] == 1.0
        assert ours[task_id]["breakdown"] == theirs[task_id]["reward_breakdown"]


def telecom_tasks(n: int = 10) -> list[str]:
    """Telecom base tasks with distinct user scenarios (the stub tells tasks apart by scenario)
    and a reference write whose omission changes the end state (so the sabotage must fail)."""
    from envs.base import TaskSelection
    from envs.tau2 import tasks
    from testkit.gold import last_state_changing_write

    seen, picked = set(), []
    for task_id in tasks.select(TaskSelection(domain="telecom", split="base")):
        task = tasks.task("telecom", task_id)
        scenario = str(task.user_scenario)
        if scenario in seen or not task.evaluation_criteria.actions:
            continue
        if last_state_changing_write("telecom", task) is None:
            continue
        seen.add(scenario)
        picked.append(task_id)
        if len(picked) == n:
            break
    return picked


@pytest.mark.slow
@pytest.mark.parametrize("sabotage", [False, True], ids=["gold", "sabotaged"])
def test_telecom_tau2_run_and_direct_agree(tmp_path, monkeypatch, sabotage):
    """Ten telecom tasks, the user's own reference actions played on the phone: equal requests,
    rewards and reward breakdowns; the gold replay scores 1.0, the sabotaged one 0.0."""
    ids = telecom_tasks()
    assert len(ids) == 10
    with Stub("telecom", ids, sabotage) as stub:
        theirs = tau2_run(stub, "telecom", ids, tmp_path / "tau2")
        tau2_bodies = stub.take()
        ours = runtime_direct(stub, "telecom", ids, tmp_path / "rt", monkeypatch)
        runtime_bodies = stub.take()
        assert_same_requests(tau2_bodies, runtime_bodies, stub.replay, ids)
    user_calls = [b for b in runtime_bodies if "<scenario>" in b["messages"][0]["content"]
                  and any(m.get("tool_calls") for m in b["messages"])]
    assert user_calls, "the user must have played its own actions"
    for task_id in ids:
        assert ours[task_id]["score"] == theirs[task_id]["reward"] == (0.0 if sabotage else 1.0), task_id
        assert ours[task_id]["breakdown"] == theirs[task_id]["reward_breakdown"], task_id
