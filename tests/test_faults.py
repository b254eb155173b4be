"""A flaky network and a crashing runtime never give a wrong score silently.

A fault-injecting loopback proxy (``testkit.loopback.FaultProxy``) sits in front of the
gold-replaying stub (``bench/stub_server.py``), which scores 1.0 on every task when nothing goes
wrong; each fault is injected into a share of the calls. Then a run is SIGKILLed again and again
at random moments and resumed. Either way: exactly one record per episode, and every record is
an error, a full score, or flagged as holding malformed model output.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter

import pytest

from testkit.loopback import FaultProxy, agent_call
from tests.conftest import read_records
from tests.test_fail_fast import fast_retries, gold_stub  # noqa: F401 - fixtures
from tests.test_resume_and_cli import _scripted_cli, read_records_tolerant

TASKS = "create_task_1,update_task_1,impossible_task_1"
RECOVERABLE = ("429", "500", "hang", "garbage", "no_choices", "reset")
"""Retried by the model layer: the run must end as if nothing happened."""
VISIBLE = ("empty", "truncate_args", "400")
"""Not retried: the record must say so (an error, or a malformed-output flag)."""


@pytest.mark.parametrize("fault", RECOVERABLE + VISIBLE)
def test_injected_faults_never_give_a_silently_wrong_score(fault, gold_stub, fast_retries,  # noqa: F811
                                                           tmp_path, monkeypatch):
    from runtime import validate

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    seen = Counter()

    def every_other_agent_turn(n, body):
        if not agent_call(body):
            return None
        seen["agent"] += 1
        return fault if seen["agent"] % 2 == 1 else None

    out = tmp_path / "run"
    with FaultProxy(gold_stub, every_other_agent_turn, hang_s=3) as proxy:
        code = validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", TASKS,
                              "--model", "openai/stub", "--api-base", proxy.url + "/v1",
                              "--out", str(out), "--no-cache", "--concurrency", "2",
                              "--request-timeout", "1", "--max-error-rate", "1"])
    assert code == 0 and proxy.injected, "the fault must have been injected"
    records = read_records(out)
    assert sorted(r["key"]["task_id"] for r in records) == sorted(TASKS.split(","))
    for r in records:
        assert r["status"] == "error" or r["score"] == 1.0 or r["flags"], r
    if fault in RECOVERABLE:
        assert all(r["status"] == "ok" and r["score"] == 1.0 and not r["flags"] for r in records)


@pytest.mark.slow
def test_repeated_kills_at_random_moments_end_with_one_record_per_episode(tmp_path):
    """Kills alternate between start-up (a random moment in the first seconds: imports, the
    run folder being opened) and mid-run (a random moment after the next record lands, while
    episodes are under way), so they land however fast the machine is."""
    out = tmp_path / "run"
    args = ("--task-ids", "1,2,3,5,7", "--concurrency", "3")
    rng = random.Random(16)
    kills = 0

    def recorded() -> int:
        return len(read_records_tolerant(out)) if (out / "records.jsonl").exists() else 0

    for attempt in range(8):
        before = recorded()
        proc = _scripted_cli(out, *args, latency=0.3)
        if attempt % 2 == 0:
            time.sleep(rng.uniform(0.5, 4.0))
        else:
            deadline = time.monotonic() + 300
            while recorded() == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(rng.uniform(0.0, 1.0))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
    proc = _scripted_cli(out, *args)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr
    assert kills >= 3, "the kills should land before the run is done"
    records = read_records_tolerant(out)
    print(f"{kills} kills, then a clean resume: {len(records)} records")
    counts = Counter((r["key"]["task_id"], r["key"]["mode"], r["key"]["trial"]) for r in records)
    assert len(counts) == 15 and set(counts.values()) == {1}
    assert all(r["status"] == "ok" and r["score"] == 1.0 for r in records)
