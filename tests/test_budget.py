"""Spending a budget: the run's --max-cost, user prices, per-episode limits on τ²."""

from __future__ import annotations

from collections import Counter

import pytest

# USD per million tokens: the scripted roles report ~chars/4 tokens, so an airline episode
# (a 5,000-token policy in every executor call) costs cents at this price.
PRICE = "100/100"


@pytest.fixture
def roles():
    from testkit.roles import ScriptedRoles

    return ScriptedRoles().model_name("budget-roles")


def _args(model: str, *extra: str) -> list[str]:
    return ["--env", "tau2", "--domain", "airline", "--mode", "all", "--model", model,
            "--task-ids", "1,2,3,5", "--concurrency", "2", "--no-report", *extra]


def _cost(record: dict) -> float:
    return record["usage"]["total"]["cost_usd"]


def test_max_cost_stops_within_one_episode_and_resumes_to_completion(validate, roles, capsys):
    code, first = validate(*_args(roles, "--price", f"{roles}={PRICE}", "--max-cost", "4"))
    err = capsys.readouterr().err
    assert code == 4, err
    spent = sum(_cost(r) for r in first)
    biggest = max(_cost(r) for r in first)
    assert 0 < len(first) < 12, "the limit should stop the run part-way"
    assert spent <= 4 + biggest, (spent, biggest)
    assert spent > 4 - 2 * biggest, "it should spend the budget, not stop far below it"
    assert "cost limit $4 reached" in err and "not started" in err and f"${spent:.4f} spent" in err

    # The same limit again: nothing starts, the same exit code, nothing lost or duplicated.
    code, again = validate(*_args(roles, "--price", f"{roles}={PRICE}", "--max-cost", "4"))
    assert code == 4 and len(again) == len(first)

    code, records = validate(*_args(roles, "--price", f"{roles}={PRICE}", "--max-cost", "100"))
    assert code == 0, capsys.readouterr().err
    counts = Counter(r["record_id"] for r in records)
    assert len(counts) == 12 and set(counts.values()) == {1}
    assert all(r["status"] == "ok" and r["score"] == 1.0 for r in records)
    assert {r["record_id"]: r for r in records[:len(first)]} == {r["record_id"]: r for r in first}


def test_user_price_is_charged_per_token(validate, roles):
    code, records = validate(*_args(roles, "--price", f"{roles}=2/10", "--task-ids", "1",
                                    "--mode", "direct"))
    assert code == 0
    total = records[0]["usage"]["total"]
    expected = (total["prompt_tokens"] * 2 + total["completion_tokens"] * 10) / 1e6
    assert total["cost_usd"] == pytest.approx(expected) and expected > 0


def test_max_cost_refuses_an_unpriced_role(validate, roles, capsys):
    code, records = validate(*_args(roles, "--max-cost", "1"))
    err = capsys.readouterr().err
    assert code == 2 and not records
    assert err.count("\n") == 1 and f"no price known for model = {roles}" in err
    assert f"--price {roles}=IN/OUT" in err
    # Said free: it runs.
    code, records = validate(*_args(roles, "--max-cost", "1", "--price", f"{roles}=0/0",
                                    "--task-ids", "1", "--mode", "direct"))
    assert code == 0 and len(records) == 1


@pytest.mark.parametrize("bad", ["nope", "gpt=3", "=1/2", "m=-1/2"])
def test_bad_price_is_one_line_exit_2(validate, roles, capsys, bad):
    code, _ = validate(*_args(roles, "--price", bad))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "IN/OUT" in err, err


@pytest.mark.parametrize("option,value,termination", [
    ("--episode-max-tokens", "3000", "limit:tokens"),
    ("--episode-max-cost", "0.002", "limit:cost"),
    ("--episode-timeout", "0.000001", "limit:time"),
])
def test_episode_limit_is_a_termination_scored_unfinished(validate, roles, option, value,
                                                         termination, capsys):
    code, records = validate(*_args(roles, "--price", f"{roles}=1/1", option, value,
                                    "--task-ids", "1,2"))
    assert code == 0, capsys.readouterr().err
    assert len(records) == 6
    assert all(r["status"] == "ok" and r["error"] is None for r in records)
    assert {r["termination"] for r in records} == {termination}
    # τ² scores a run that did not finish (like one out of steps) 0.
    assert all(r["score"] == 0.0 for r in records)
    assert all(r["score_info"]["reward_info"]["info"]["note"].endswith("max_steps") for r in records)
    out = capsys.readouterr().out
    assert "limit" in out  # counted per arm in the printed summary


def test_summary_counts_limited_episodes_per_arm(validate, roles, tmp_path):
    import json

    code, records = validate(*_args(roles, "--episode-max-tokens", "3000", "--task-ids", "1"))
    assert code == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {name: row["limited"] for name, row in summary["by_arm"].items()} == {
        "direct": 1, "plan-first": 1, "refine": 1}
    assert all(row["errors"] == 0 for row in summary["by_arm"].values())


def test_episode_limit_mid_conversation_keeps_what_happened(validate, roles, tmp_path):
    """A token limit reached during execution ends the conversation there, not before."""
    _, full = validate(*_args(roles, "--task-ids", "1", "--mode", "direct"), out=tmp_path / "full")
    used = full[0]["usage"]["total"]
    tokens = used["prompt_tokens"] + used["completion_tokens"]
    _, records = validate(*_args(roles, "--task-ids", "1", "--mode", "direct",
                                 "--episode-max-tokens", str(tokens // 2)), out=tmp_path / "half")
    cut = records[0]
    assert full[0]["termination"] != "limit:tokens"
    assert cut["termination"] == "limit:tokens" and cut["score"] == 0.0
    assert 1 < cut["turns"] < full[0]["turns"]


def test_a_cached_replay_stops_at_the_token_limit_where_the_first_run_stopped(validate, tmp_path):
    """Answers replayed from the response cache count the tokens their first calls used toward
    the episode's limit (not toward what the run spent), so a re-run from the cache is the same
    experiment: on the earlier layer a replay counted none and played past the limit."""
    from tests.conftest import stub_server

    server = stub_server().serve(0, 0.0, ["mock"], ["create_task_1"])
    try:
        args = ["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", "create_task_1",
                "--model", "openai/m", "--api-base", f"http://127.0.0.1:{server.server_address[1]}/v1",
                "--concurrency", "1", "--no-report"]
        _, (full,) = validate(*args, "--no-cache", out=tmp_path / "full")
        tokens = full["usage"]["total"]["prompt_tokens"] + full["usage"]["total"]["completion_tokens"]
        limited = [*args, "--episode-max-tokens", str(tokens // 2)]
        _, (first,) = validate(*limited, out=tmp_path / "first")
        _, (again,) = validate(*limited, out=tmp_path / "again")  # the same cache folder
    finally:
        server.shutdown()
    assert full["termination"] != "limit:tokens" and first["termination"] == "limit:tokens"
    assert 1 < first["turns"] < full["turns"]
    assert (again["termination"], again["turns"], again["score"]) == (
        first["termination"], first["turns"], first["score"])
    spent, used = again["usage"]["total"], first["usage"]["total"]
    assert spent["cached_calls"] == spent["calls"] > 0
    assert spent["prompt_tokens"] == spent["completion_tokens"] == 0 and spent["cost_usd"] == 0
    assert spent["replayed_tokens"] == used["prompt_tokens"] + used["completion_tokens"]
