"""``--env tau3 --mode direct`` is the release's ``tau2 run --agent llm_agent``: with the gold stub
(``bench/stub_server.py``, run in the τ³ venv so it replays τ³'s tasks) behind a logging proxy,
both send equal agent, user and NL-judge requests (tool-call ids masked, byte for byte) and get
equal rewards and reward breakdowns.

Airline, retail and banking (``golden_retrieval``; the stub's sabotage builds its environments
with that configuration): gold and sabotaged replays. Retail's rewards include NL assertions:
``tau2 run``'s judge (gpt-4.1, through ``OPENAI_API_BASE``) and the runtime's (``--nl-judge-model``
on the run's endpoint) both reach the stub, which answers them from the task's assertions, and
their requests are compared like the agent's and the user's. Needs τ³ set up (``TAU3_SOURCE``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from testkit.loopback import FaultProxy
from tests.conftest import tau3_record

ROOT = Path(__file__).resolve().parents[1]
TAU2_SEED, TAU2_FIRST_TRIAL_SEED = 300, 626729
NL_JUDGE = "gpt-4.1-2025-04-14"
"""τ³'s own NL-assertion judge model, named so that the runtime sends it to the stub (a named
judge model goes to the run's judge endpoint) as ``tau2 run`` does through ``OPENAI_API_BASE``."""
_IDS = re.compile(r"call_[0-9a-f]{12}")
_MARKER = re.compile(r"\[task [a-z_-]+/(.+?)\]")
_SCENARIO = re.compile(r"<scenario>\n(.*)\n</scenario>", re.S)


def _data_dir(record: dict, tmp: Path) -> Path:
    """A data folder of the test's own: ``tau2 run`` writes its simulations into it."""
    data = tmp / "data" / "tau2"
    data.mkdir(parents=True)
    for part in ("domains", "user_simulator"):
        (data / part).symlink_to(Path(record["data_dir"]).resolve() / "tau2" / part, target_is_directory=True)
    return tmp / "data"


class Stub:
    """The gold stub in the τ³ venv, behind a logging proxy in this process."""

    def __init__(self, record: dict, data: Path, domain: str, ids: list[str], sabotage: bool = False,
                 retrieval: str | None = None):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        argv = [record["python"], str(ROOT / "bench" / "stub_server.py"), "--port", str(port),
                "--domains", domain, "--task-ids", ",".join(ids), *(["--sabotage"] if sabotage else []),
                *(["--retrieval", retrieval] if retrieval else [])]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TAU2_DATA_DIR": str(data),
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if "stub model on" not in line:
            self.proc.kill()
            raise RuntimeError(f"the τ³ stub did not start: {self.proc.stderr.read()[-2000:]}")
        self.proxy = FaultProxy(f"http://127.0.0.1:{port}", lambda n, b: None)
        self.url = self.proxy.url + "/v1"

    def take(self) -> list[dict]:
        with self.proxy.lock:
            bodies = [{**r["body"], "_raw": r["raw"]} for r in self.proxy.requests]
            self.proxy.requests.clear()
        return bodies

    def __enter__(self) -> "Stub":
        return self

    def __exit__(self, *exc) -> None:
        self.proxy.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def tau2_run(record: dict, data: Path, stub: Stub, domain: str, ids: list[str], retrieval: str | None) -> dict:
    """The release's own ``tau2 run`` on the stub: reward info by task."""
    args = json.dumps({"api_base": stub.url, "temperature": 0.0})
    cmd = [str(Path(record["python"]).with_name("tau2")), "run", "--domain", domain, "--agent", "llm_agent",
           "--agent-llm", "openai/stub", "--user-llm", "openai/stub", "--agent-llm-args", args,
           "--user-llm-args", args, "--task-ids", *ids, "--max-concurrency", "1", "--seed", str(TAU2_SEED),
           "--save-to", "tau2", "--log-level", "ERROR", *(["--retrieval-config", retrieval] if retrieval else [])]
    # The release's NL-assertion judge (gpt-4.1, through litellm's OpenAI route) reaches the stub too.
    env = {"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-unused-0000", "TAU2_DATA_DIR": str(data),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HOME": str(data), "OPENAI_API_BASE": stub.url}
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    sims = json.loads((data / "simulations" / "tau2" / "results.json").read_text())["simulations"]
    return {s["task_id"]: s["reward_info"] for s in sims}


def runtime_direct(stub: Stub, domain: str, ids: list[str], out: Path, retrieval: str | None, monkeypatch) -> dict:
    from runtime import validate

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000")
    code = validate.main(["--env", "tau3", "--domain", domain, "--mode", "direct", "--task-ids", ",".join(ids),
                          "--model", "openai/stub", "--api-base", stub.url, "--out", str(out), "--no-cache",
                          "--concurrency", "1", "--seeding", "tau2", "--seed", str(TAU2_SEED), "--no-judge",
                          "--nl-judge-model", NL_JUDGE,
                          *(["--retrieval", retrieval] if retrieval else [])])
    assert code == 0
    rows = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    return {r["key"]["task_id"]: r for r in rows}


def by_task(bodies: list[dict]) -> dict[str, list[dict]]:
    """Requests by task, in order, ids masked; a user's opening request (no marker yet) is
    matched to its task by the scenario its later requests carry beside the marker."""
    scenario_of: dict[str, str] = {}
    for body in bodies:
        system = body["messages"][0].get("content") or ""
        marker = _MARKER.search(json.dumps(body["messages"][1:], ensure_ascii=False))
        if marker and _SCENARIO.search(system):
            scenario_of[_SCENARIO.search(system).group(1)] = marker.group(1)
    out: dict[str, list[dict]] = {}
    for body in bodies:
        marker = _MARKER.search(json.dumps(body["messages"], ensure_ascii=False))
        task_id = marker.group(1) if marker else scenario_of[_SCENARIO.search(body["messages"][0]["content"]).group(1)]
        masked = {k: json.loads(_IDS.sub("call_X", json.dumps(v))) for k, v in body.items() if k != "_raw"}
        out.setdefault(task_id, []).append({**masked, "_raw": _IDS.sub("call_X", body["_raw"])})
    return out


def is_judge(body: dict) -> bool:
    """τ³'s NL-assertion judge asks for ``expectedOutcome`` verdicts in its system prompt."""
    return "`expectedOutcome`" in (body["messages"][0].get("content") or "")


def top_level(raw: str) -> dict[str, str]:
    """A request body's top-level values, each as the exact bytes it was sent as."""
    decoder, out, i = json.JSONDecoder(), {}, raw.index("{") + 1
    while raw[i] != "}":
        key, i = decoder.raw_decode(raw, i)
        i = raw.index(":", i) + 1
        _, end = decoder.raw_decode(raw, i)
        out[key], i = raw[i:end], end
        i += raw[i] == ","
    return out


def compare(tau2_bodies: list[dict], runtime_bodies: list[dict], ids: list[str]) -> dict:
    ours, theirs = by_task(runtime_bodies), by_task(tau2_bodies)
    assert sorted(theirs) == sorted(ids) == sorted(ours)
    counts: dict = {"requests": 0, "equal_json": 0, "equal_bytes": 0, "equal_value_bytes": 0}
    for task_id in ids:
        assert len(ours[task_id]) == len(theirs[task_id]), task_id
        for a, b in zip(theirs[task_id], ours[task_id]):
            counts["requests"] += 1
            x, y = ({k: v for k, v in c.items() if k != "_raw"} for c in (a, b))
            counts["equal_json"] += x == y
            if x != y and "first_json_difference" not in counts:
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                pairs = [(p, q) for p, q in zip(x.get("messages", []), y.get("messages", [])) if p != q]
                counts["first_json_difference"] = f"{task_id}: {keys} " + (
                    f"tau2 run: {json.dumps(pairs[0][0])[:300]} runtime: {json.dumps(pairs[0][1])[:300]}"
                    if pairs else f"{len(x.get('messages', []))} vs {len(y.get('messages', []))} messages")
            counts["equal_bytes"] += a["_raw"] == b["_raw"]
            counts["equal_value_bytes"] += top_level(a["_raw"]) == top_level(b["_raw"])
            if a["_raw"] != b["_raw"] and "first_byte_difference" not in counts:
                i = next(i for i, (x, y) in enumerate(zip(a["_raw"], b["_raw"])) if x != y)
                counts["first_byte_difference"] = f"tau2 run: {a['_raw'][max(0, i - 80):i + 80]!r} " \
                    f"runtime: {b['_raw'][max(0, i - 80):i + 80]!r}"
    return counts


def agree(tmp_path, monkeypatch, domain: str, ids: list[str], *, sabotage=False, retrieval=None) -> dict:
    record = tau3_record()
    data = _data_dir(record, tmp_path)
    with Stub(record, data, domain, ids, sabotage, retrieval) as stub:
        theirs = tau2_run(record, data, stub, domain, ids, retrieval)
        tau2_bodies = stub.take()
        ours = runtime_direct(stub, domain, ids, tmp_path / "rt", retrieval, monkeypatch)
        runtime_bodies = stub.take()
    counts = compare(tau2_bodies, runtime_bodies, ids)
    print(f"tau3 {domain} agreement: {counts}")
    assert counts["equal_json"] == counts["requests"], counts
    # Byte for byte: values and the order of the top-level members (the runtime lays its τ³
    # requests out as the OpenAI SDK does, which is what the release's litellm < 1.82.7 sends).
    assert counts["equal_value_bytes"] == counts["requests"], counts
    assert counts["equal_bytes"] == counts["requests"], counts
    assert {b["seed"] for b in runtime_bodies if not is_judge(b)} == {TAU2_FIRST_TRIAL_SEED}
    counts["judge_requests"] = sum(map(is_judge, runtime_bodies))
    assert counts["judge_requests"] == sum(map(is_judge, tau2_bodies)), counts
    for task_id in ids:
        assert ours[task_id]["score"] == theirs[task_id]["reward"], task_id
        assert ours[task_id]["breakdown"] == theirs[task_id]["reward_breakdown"], task_id
    return {"counts": counts, "scores": {t: ours[t]["score"] for t in ids}}


AIRLINE_SAMPLE = ["0", "7"]
AIRLINE_TEN = ["0", "1", "3", "4", "5", "7", "10", "11", "12", "13"]
AIRLINE_WRITES = ["7", "11", "12", "14", "15", "17", "20", "21", "23", "33"]
"""Tasks with a reference write whose omission changes τ³'s gold end state (the sabotage drops it)."""
RETAIL_SAMPLE = ["2", "19"]
RETAIL_TEN = ["2", "3", "4", "16", "19", "21", "28", "29", "37", "39"]
"""Retail tasks with NL assertions (the judge is asked) and a state-changing reference write."""
BANKING_WRITES = ["task_001", "task_002", "task_003", "task_005", "task_006", "task_007", "task_010", "task_015", "task_016", "task_017"]
"""Banking tasks with a reference write whose omission changes the gold end state under
``golden_retrieval`` (the stub finds it on environments built with that configuration)."""
BANKING_TEN = ["task_001", "task_002", "task_003", "task_004", "task_005", "task_006", "task_007", "task_008", "task_010", "task_012"]


def test_direct_sends_what_the_releases_tau2_run_sends_airline_sample(tmp_path, monkeypatch):
    result = agree(tmp_path, monkeypatch, "airline", AIRLINE_SAMPLE)
    assert result["scores"] == {"0": 1.0, "7": 1.0}


@pytest.mark.slow
@pytest.mark.parametrize("sabotage", [False, True], ids=["gold", "sabotaged"])
def test_airline_tau2_run_and_direct_agree(tmp_path, monkeypatch, sabotage):
    ids = AIRLINE_WRITES if sabotage else AIRLINE_TEN
    result = agree(tmp_path, monkeypatch, "airline", ids, sabotage=sabotage)
    assert set(result["scores"].values()) == {0.0 if sabotage else 1.0}, result


def test_retail_nl_assertions_graded_as_tau2_run_grades_them_sample(tmp_path, monkeypatch):
    result = agree(tmp_path, monkeypatch, "retail", RETAIL_SAMPLE)
    assert result["scores"] == {"2": 1.0, "19": 1.0}
    assert result["counts"]["judge_requests"] == 2, result


@pytest.mark.slow
@pytest.mark.parametrize("sabotage", [False, True], ids=["gold", "sabotaged"])
def test_retail_tau2_run_and_direct_agree(tmp_path, monkeypatch, sabotage):
    result = agree(tmp_path, monkeypatch, "retail", RETAIL_TEN, sabotage=sabotage)
    assert set(result["scores"].values()) == {0.0 if sabotage else 1.0}, result
    assert result["counts"]["judge_requests"] == len(RETAIL_TEN), result


@pytest.mark.slow
@pytest.mark.parametrize("sabotage", [False, True], ids=["gold", "sabotaged"])
def test_banking_tau2_run_and_direct_agree_with_golden_retrieval(tmp_path, monkeypatch, sabotage):
    ids = BANKING_WRITES if sabotage else BANKING_TEN
    result = agree(tmp_path, monkeypatch, "banking_knowledge", ids, sabotage=sabotage, retrieval="golden_retrieval")
    assert set(result["scores"].values()) == {0.0 if sabotage else 1.0}, result
