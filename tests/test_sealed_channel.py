"""The sealed channel, proved from the outside: an adversarial critic endpoint that tries to pass
every supervision-only value it is shown to the tested model, and the tested model's own
endpoint, which records every request it is sent.

The critic's endpoint (``testkit.adversarial_endpoint``) is a stateless model: each answer is a
function of its request (the response cache keys on the full request, so a cached answer is the
same function). Under ``sealed`` no request of the planner, reviser or executor, read at the
tested model's endpoint, may hold a supervision-only value of the task or the marker sentence,
and the episodes must complete. Under ``leaky`` the same endpoint's values and sentence must be
seen there: the test can fail.
"""

from __future__ import annotations

import json

import pytest

from envs.tau2 import Tau2Environment
from testkit.adversarial_endpoint import (
    MARKER,
    ChatStub,
    Tally,
    adversarial_critic,
    planner_and_executor,
    quiet_user,
)

TASKS = ("1", "4", "7")  # airline tasks whose reference holds IDs, dates and amounts


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-000")


def run_against_endpoints(validate, tmp_path, strategy: str):
    """One refine run of ``strategy`` with the tested model, the critic's model and the user on
    three loopback endpoints; (records, tested model's requests, critic's tally)."""
    tally = Tally()
    with ChatStub(planner_and_executor) as tested, ChatStub(adversarial_critic(tally)) as critic, \
            ChatStub(quiet_user) as user:
        code, records = validate(
            "--env", "tau2", "--mode", "refine", "--domain", "airline", "--task-ids", ",".join(TASKS),
            "--strategy", strategy, "--no-judge", "--no-cache", "--max-error-rate", "1",
            "--model", "openai/tested", "--api-base", tested.url + "/v1",
            "--critic-model", "openai/critic", "--critic-api-base", critic.url + "/v1",
            "--user-model", "openai/user", "--user-api-base", user.url + "/v1",
            out=tmp_path / strategy)
        assert code == 0
        return records, list(tested.bodies), tally


def supervision_only(record: dict) -> set[str]:
    view, supervision = Tau2Environment().load("airline", record["key"]["task_id"])
    return supervision.supervision_only_values(view.model_copy(update={"opening_request": record["opening_request"]}))


def leaked(records: list[dict], bodies: list[dict]) -> tuple[int, list[tuple[str, str]]]:
    """(requests inspected, (value, where) for each supervision-only value or the marker found in
    a tested model's request)."""
    hidden = set().union(*(supervision_only(r) for r in records)) | {MARKER}
    found = []
    for body in bodies:
        sent = json.dumps(body, ensure_ascii=False)
        found += [(value, sent[:80]) for value in hidden if value in sent]
    return len(bodies), found


@pytest.mark.slow  # about a minute: the guard and τ² load on three episodes
def test_nothing_the_critic_saw_reaches_the_tested_model_but_through_the_findings(validate, tmp_path):
    records, bodies, tally = run_against_endpoints(validate, tmp_path, "sealed")
    assert [r["status"] for r in records] == ["ok"] * len(TASKS), [r["error"] for r in records]
    hidden = set().union(*(supervision_only(r) for r in records))
    assert tally.values & hidden, "the critic endpoint never saw a supervision-only value: a vacuous test"
    # the rationale is rendered: no writer request reaches the critic's model
    assert tally.requests.get("critic", 0) >= 3 * len(TASKS) and not tally.requests.get("writer")
    for record in records:
        channel = record["channel"]
        assert channel["critic_attempts"] == 3  # extra fields, then strings in enums, then the schema
        assert channel["writer"] == "rendered" and "critic_answers" not in channel  # raw answers not kept
        assert MARKER not in json.dumps(record)  # nor any refusal quoting them
        assert 0 < channel["used_bits"] <= channel["max_bits"]
    inspected, found = leaked(records, bodies)
    assert inspected >= 3 * len(TASKS)  # planner, reviser, executor at least
    assert found == []
    print(f"sealed: {inspected} tested-model requests inspected, {len(tally.values & hidden)} of "
          f"{len(hidden)} supervision-only values tried by the critic ({len(tally.values)} values in all), "
          f"critic endpoint requests {tally.requests}, none found")


@pytest.mark.slow  # the pair runs together: this half shows the other can fail
def test_the_same_endpoint_leaks_under_leaky(validate, tmp_path):
    records, bodies, tally = run_against_endpoints(validate, tmp_path, "leaky")
    assert [r["status"] for r in records] == ["ok"] * len(TASKS), [r["error"] for r in records]
    inspected, found = leaked(records, bodies)
    values = {value for value, _ in found}
    assert MARKER in values
    assert len(values - {MARKER}) >= len(TASKS)
    print(f"leaky: {inspected} tested-model requests inspected, {len(values - {MARKER})} supervision-only "
          f"values and the marker found; critic endpoint requests {tally.requests}")
