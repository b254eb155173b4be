"""Every paid call counted when an attempt is lost, without Ray: the real model layer calling a
counting loopback endpoint, each call told to the real ledger (``runtime.backends.ray_ledger``)
as a Ray worker tells it, and the real batch loop and budget. An executor double loses one
attempt the way a dead node does — two calls answered, a third sent and never answered — and
hands the batch loop what the ledger counted, as the Ray executor does.

Checked: the re-run episode's record holds both attempts; the calls over all records equal the
calls the endpoint received; the lost attempt's cost is in the spend, in ``summary.json``'s
figures and the summary line, and ``--max-cost`` stops the run on it (also when resumed from
the records). The multi-node case is in ``tests/test_ray_cluster.py``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pathlib import Path

import pytest

from runtime.backends.ray_ledger import LedgerSink
from runtime.folder.call_ledger import Ledger, lost_attempt, replay
from runtime.batch import BudgetSpent, Outcome, run_batch
from runtime.batch.budget import RunBudget, cost_of
from runtime.episode.spec import RunSpec
from runtime.folder import lost_attempts
from runtime.folder.records import EpisodeRecord, lost_spend
from runtime.folder.store import RunStore
from runtime.llm.estimate import call_estimate
from runtime.llm.layer import Meter, ModelLayer, ModelSpec
from runtime.reports.summary import re_run_line, summarize

CALLS = 3
"""Model calls per episode."""
PRICE = (1000.0, 5000.0)
"""USD per million tokens: 100 prompt and 20 completion tokens a call cost $0.2."""
CALL_COST = (100 * PRICE[0] + 20 * PRICE[1]) / 1e6


class CountingEndpoint:
    """An OpenAI-compatible chat endpoint on loopback that counts every request it receives;
    ``hold`` (a request number) is kept unanswered until ``release``."""

    def __init__(self) -> None:
        self.received = 0
        self.hold: int | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers["Content-Length"]))
                owner.received += 1
                if owner.received == owner.hold:
                    owner.held.set()
                    owner.release.wait(30)
                body = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    e = CountingEndpoint()
    yield e
    e.close()


def spec() -> RunSpec:
    model = ModelSpec(model="double/none")
    return RunSpec(run_id="paid", env="tau2", domain="mock", task_ids=["a", "b"], modes=["plan-first", "refine"],
                   models={r: model for r in ("model", "critic_model", "judge_model", "user_model")},
                   concurrency=1)


class LedgerWorkers:
    """Runs each episode as ``CALLS`` real model calls, each counted in a ledger as a Ray
    worker's are; loses the first attempt of ``victim`` after two answered calls and a third
    sent (the endpoint holds it), as a node dying mid-call does."""

    def __init__(self, url: str, victim: str):
        self.layer = ModelLayer({"model": ModelSpec(model="openai/m", api_base=url, timeout=30.0,
                                                    price=PRICE)}, retries=0)
        self.endpoint_hold = None
        self.ledger = Ledger()
        self.victim = victim
        self.runs: dict[str, int] = {}
        self.queue: list = []
        self.endpoint: CountingEndpoint | None = None

    def submit(self, key, artifacts) -> bool:
        self.queue.append(key)
        return True

    def wait(self) -> list[Outcome]:
        key = self.queue.pop(0)
        self.runs[key.id()] = self.runs.get(key.id(), 0) + 1
        attempt = f"{key.id()}#{self.runs[key.id()]}"
        meter = Meter(sink=LedgerSink(self.ledger, attempt, "0@node:1", remote=False))
        client = self.layer.client("model", "executor", meter)
        if key.id() == self.victim and self.runs[key.id()] == 1:
            for _ in range(CALLS - 1):
                client.complete([{"role": "user", "content": "hi"}])
            self.endpoint.hold = self.endpoint.received + 1
            threading.Thread(target=client.complete, args=([{"role": "user", "content": "hi"}],),
                             daemon=True).start()
            assert self.endpoint.held.wait(30), "the third call never reached the endpoint"
            # the worker is gone: what comes back is the ledger's count, not a record
            return [Outcome(key=key, record=None, lost=("ActorDiedError", "node died"),
                            attempt=lost_attempt(attempt, self.ledger.take(attempt)))]
        for _ in range(CALLS):
            client.complete([{"role": "user", "content": "hi"}])
        self.ledger.drop(attempt)
        record = EpisodeRecord(run_id="paid", key=key, record_id=key.id(), status="ok", seed=0, score=1.0,
                               usage=meter.as_dict(), started_at="t", finished_at="t")
        return [Outcome(key=key, record=record, where="1@node:2")]

    def abort(self, cause) -> None:
        pass

    def close(self, finished: bool) -> None:
        pass


def workers(endpoint: CountingEndpoint, victim: str) -> LedgerWorkers:
    w = LedgerWorkers(endpoint.url, victim)
    w.endpoint = endpoint
    return w


def calls_in(records: list[EpisodeRecord]) -> int:
    return sum(r.usage["total"]["calls"] + lost_spend(r)[0] for r in records)


def test_the_re_run_episode_holds_both_attempts_and_every_call_is_counted(tmp_path, endpoint):
    s = spec()
    victim = s.keys()[0].id()
    run_batch(s, RunStore(tmp_path), lambda spec, n: workers(endpoint, victim))
    records = RunStore(tmp_path).records()  # read back: the attempts are in the written line
    assert len(records) == 4
    again = next(r for r in records if r.record_id == victim)
    lost, finished = again.attempts
    assert (lost.ended, lost.calls, lost.in_flight_calls, lost.worker) == ("lost", CALLS - 1, 1, "0@node:1")
    assert lost.prompt_tokens == 100 * (CALLS - 1) and lost.cost_usd == pytest.approx(CALL_COST * (CALLS - 1))
    assert "ActorDiedError" in lost.reason
    assert (finished.ended, finished.number, finished.calls, finished.worker) == ("finished", 2, CALLS, "1@node:2")
    assert all(r.attempts == [] for r in records if r.record_id != victim), "one attempt: no list"
    assert calls_in(records) == endpoint.received == 4 * CALLS + CALLS, \
        "the records must add up to every call the endpoint received"
    assert cost_of(again) == pytest.approx(CALL_COST * (2 * CALLS - 1) + ESTIMATE)
    summary = summarize(records)
    assert sum(a["cost_usd"] for a in summary["by_arm"].values()) == pytest.approx(
        CALL_COST * (4 * CALLS + CALLS - 1)), "the summary's cost counts the lost attempt"
    line = re_run_line(summary["re_run"])
    assert line.startswith(f"1 episode re-run after a lost Ray worker or node: +{CALLS} calls "
                           f"(1 in flight when lost, ≈${ESTIMATE:.4f} by their requests)"), line
    assert ESTIMATE > 0 and summary["re_run"]["in_flight_cost_usd"] == pytest.approx(ESTIMATE)
    assert f"+${CALL_COST * (CALLS - 1):.4f}" in line


ESTIMATE = call_estimate("openai/m", PRICE, "executor", {"messages": [{"role": "user", "content": "hi"}]})
"""What the lost attempt's call in flight counts for until its answer is known (never)."""


def test_the_budget_counts_the_lost_attempt(tmp_path, endpoint):
    s = spec()
    victim = s.keys()[0].id()
    # 4 episodes cost 4 × $0.6 = $2.4: within $2.5, unless the lost attempt's $0.4 (and its
    # call in flight, at its estimate) is counted
    limit = 4 * CALLS * CALL_COST + 0.1
    with pytest.raises(BudgetSpent) as stopped:
        run_batch(s, RunStore(tmp_path), lambda spec, n: workers(endpoint, victim), max_cost=limit)
    records = RunStore(tmp_path).records()
    done = len(records)
    assert done + stopped.value.remaining == 4 and done < 4
    spent = done * CALLS * CALL_COST + (CALLS - 1) * CALL_COST + ESTIMATE
    assert stopped.value.spent == pytest.approx(spent)
    assert RunBudget(limit, records).spent == pytest.approx(spent), "a resume counts it from the records"


def test_a_call_in_flight_counts_at_its_requests_estimate(tmp_path, endpoint):
    """The call the endpoint holds when the attempt is lost was served: it counts at what its
    request would cost (its size, the model's price), not $0, until its answer is known."""
    s = spec()
    victim = s.keys()[0].id()
    run_batch(s, RunStore(tmp_path), lambda spec, n: workers(endpoint, victim))
    lost = next(r for r in RunStore(tmp_path).records() if r.record_id == victim).attempts[0]
    assert lost.in_flight_calls == 1 and lost.in_flight_cost_usd == pytest.approx(ESTIMATE) and ESTIMATE > 0
    assert lost.cost_usd == pytest.approx((CALLS - 1) * CALL_COST), "measured cost stays measured"
    big = call_estimate("openai/m", PRICE, "executor", {"messages": [{"role": "user", "content": "x" * 4000}]})
    assert big > ESTIMATE, "a longer request is estimated dearer"
    assert call_estimate("nobody/prices-this", None, "executor", {"messages": []}) == 0.0


def test_a_call_the_ledger_refuses_never_leaves(tmp_path, endpoint):
    """An attempt the driver already took as lost (its worker only seemed dead) makes no more
    calls: the ledger refuses the ticket and the request is never sent."""
    from runtime.backends.ray_ledger import CallRefused

    ledger = Ledger()
    layer = ModelLayer({"model": ModelSpec(model="openai/m", api_base=endpoint.url, timeout=30.0,
                                           price=PRICE)}, retries=0)
    client = layer.client("model", "executor", Meter(sink=LedgerSink(ledger, "e#1", "w", remote=False)))
    client.complete([{"role": "user", "content": "hi"}])
    assert ledger.take("e#1")["calls"] == 1
    with pytest.raises(CallRefused):
        client.complete([{"role": "user", "content": "hi"}])
    assert endpoint.received == 1, "a refused call must not reach the endpoint"


def test_the_journal_gives_the_ledgers_counts_once_the_ledger_is_gone(tmp_path):
    """The ledger lives on the head; its journal on the driver's machine outlives it: replayed,
    it gives every call that left, not just the counts of the last reading."""
    journal = tmp_path / "ledger.jsonl"
    ledger = Ledger(str(journal))
    t1 = ledger.begin("e#1", "w", "executor", 0.3)
    ledger.end("e#1", "w", t1, {"calls": 1, "prompt_tokens": 5, "cost_usd": 0.5})
    read_before = ledger.snapshot()  # the driver's last reading ...
    ledger.begin("e#1", "w", "executor", 0.25)  # ... and a call that left after it
    ledger.begin("e#2", "w", "user", 0.1)
    ledger.drop("e#2")
    assert read_before["e#1"]["in_flight_calls"] == 0
    with journal.open("a") as f:
        f.write('["begin", "e#1", "w", "exec')  # a torn last line (the ledger killed mid-write)
    replayed = replay(journal)
    assert replayed == {"e#1": {**ledger.snapshot()["e#1"]}}
    assert (replayed["e#1"]["calls"], replayed["e#1"]["in_flight_calls"]) == (1, 1)
    assert replayed["e#1"]["in_flight_cost_usd"] == pytest.approx(0.25)
    assert replay(tmp_path / "missing.jsonl") is None
    short = lost_attempt("e#1", read_before["e#1"], at_least=True)
    assert short.at_least and short.in_flight_calls == 0
    line = re_run_line({"episodes": 1, "lost_attempts": 1, "calls": 1, "in_flight_calls": 0,
                        "tokens": 5, "cost_usd": 0.5, "at_least": True})
    assert "+at least 1 calls" in line, line


def test_a_journal_left_in_the_folder_is_counted_by_the_next_run_once(tmp_path):
    """A driver that ended before it counted its attempts (Ray's exit, a kill) left its ledger's
    journal in the folder: the next run notes each attempt it holds open — not the ones whose
    records came back (the driver's ``drop``), nor the ones already taken — with an id that a
    second recovery or the driver's own note of it repeats, so nothing is counted twice."""
    from runtime.folder import call_ledger

    journal = call_ledger.new_journal(tmp_path)
    assert Path(journal).is_absolute(), "the ledger writing it runs in another working directory"
    ledger = Ledger(journal)
    t = ledger.begin("ep-a#1", "w0", "executor", 0.2)
    ledger.end("ep-a#1", "w0", t, {"calls": 1, "prompt_tokens": 7, "cost_usd": 0.4})
    ledger.begin("ep-a#1", "w0", "executor", 0.3)  # in flight when the driver went
    ledger.begin("ep-b#1", "w1", "executor", 0.1)
    call_ledger.mark_recorded(journal, ["ep-b#1"])  # its record was appended: the record counts it
    ledger.begin("ep-c#2", "w1", "user", 0.1)
    ledger.take("ep-c#2")  # lost and noted by the driver while the ledger lived
    kept = Path(journal).read_bytes()
    noted_by_driver = call_ledger.lost_attempt("ep-a#1", replay(journal)["ep-a#1"], journal=journal)
    lost_attempts.note(tmp_path, "ep-a", noted_by_driver)  # the driver got as far as this
    assert call_ledger.recover(tmp_path) == (0, 0), "a journal this process still writes is not read"
    call_ledger.release(journal, counted=False)  # its run ended with attempts it had not counted
    assert call_ledger.recover(tmp_path) == (1, 2)
    assert not (tmp_path / call_ledger.DIR).exists(), "a counted journal is removed"
    (tmp_path / call_ledger.DIR).mkdir()
    Path(journal).write_bytes(kept)  # as if the recovery had died before removing it
    call_ledger.recover(tmp_path)
    pending = lost_attempts.unrecorded(tmp_path, [])
    assert list(pending) == ["ep-a"] and len(pending["ep-a"]) == 1, pending
    (a,) = pending["ep-a"]
    assert (a.calls, a.in_flight_calls, a.cost_usd, a.worker) == (1, 1, 0.4, "w0")
    assert a.in_flight_cost_usd == pytest.approx(0.3)


def test_the_ledger_counts_each_call_once():
    ledger = Ledger()
    t1 = ledger.begin("e#1", "w", "executor")
    ledger.end("e#1", "w", t1, {"calls": 1, "prompt_tokens": 5, "cost_usd": 0.5})
    t2 = ledger.begin("e#1", "w", "executor")
    seen = ledger.snapshot()["e#1"]  # what the driver reads each second, in case the head goes
    assert (seen["calls"], seen["in_flight_calls"], seen["worker"]) == (1, 1, "w")
    taken = ledger.take("e#1")
    assert (taken["calls"], taken["in_flight_calls"], taken["cost_usd"]) == (1, 1, 0.5)
    ledger.end("e#1", "w", t2, {"calls": 1, "cost_usd": 0.5})  # late: counted in flight already
    assert ledger.begin("e#1", "w", "executor") is None
    assert ledger.take("e#1")["calls"] == 0 and ledger.open_attempts() == []
    ledger.begin("e#2", "w", "executor")
    ledger.drop("e#2")  # it came back: its record counts it
    assert ledger.open_attempts() == [] and ledger.take("e#2")["calls"] == 0


def test_the_budget_counts_a_lost_attempt_at_once_and_a_resume_keeps_it(tmp_path, endpoint):
    """The lost attempt's $0.4 is over a $0.3 limit: the episode is not started again; its
    calls wait in the folder for the record of the episode's re-run."""
    s = spec()
    victim = s.keys()[0].id()
    w = workers(endpoint, victim)
    with pytest.raises(BudgetSpent) as stopped:
        run_batch(s, RunStore(tmp_path), lambda spec, n: w, max_cost=0.3)
    assert stopped.value.spent == pytest.approx((CALLS - 1) * CALL_COST + ESTIMATE)
    assert stopped.value.remaining == 4 and w.runs == {victim: 1}
    # no record holds the lost attempt yet: the folder keeps it, and the budget counts it
    store = RunStore(tmp_path)
    pending = lost_attempts.unrecorded(tmp_path, store.records())
    assert store.records() == [] and [a.calls for a in pending[victim]] == [CALLS - 1]
    assert RunBudget(0.3, store.records(), pending).spent == pytest.approx((CALLS - 1) * CALL_COST + ESTIMATE)
    # the resume: the episode's record takes the lost attempt in, once
    again = workers(endpoint, victim="none")
    run_batch(s, store, lambda spec, n: again)
    records = RunStore(tmp_path).records()
    rerun = next(r for r in records if r.record_id == victim)
    assert [(a.number, a.ended, a.calls) for a in rerun.attempts] == [(1, "lost", CALLS - 1), (2, "finished", CALLS)]
    assert calls_in(records) == endpoint.received == 4 * CALLS + CALLS
    assert lost_attempts.unrecorded(tmp_path, records) == {}, "held by a record: pending no more"
    assert RunBudget(9.0, records, {}).spent == pytest.approx(CALL_COST * (4 * CALLS + CALLS - 1) + ESTIMATE)
