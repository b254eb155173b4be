"""Per-episode limits on ToolSandbox: the refused turn ends ToolSandbox's own play there, and its
own evaluation scores what happened (as for a play out of messages), not a crash and not an
error. Skips with the reason when ToolSandbox is not set up (see tests/conftest.py)."""

from __future__ import annotations

import pytest

TASK = "send_message_with_contact_content_cellular_off"  # four agent turns on the gold script


@pytest.fixture
def gold_roles(ts_env):
    from testkit.roles import ScriptedRoles
    from testkit.toolsandbox_gold import ToolSandboxGold

    maps = {TASK: ts_env.task_info("default", TASK)["tool_name_map"]}
    return ScriptedRoles(act=ToolSandboxGold(maps.__getitem__)).model_name("ts-budget-roles")


def _run(validate, model, out, *extra):
    code, records = validate("--env", "toolsandbox", "--mode", "direct", "--model", model,
                             "--tasks", f"{TASK},", "--no-report", *extra, out=out)
    assert code == 0
    assert len(records) == 1
    return records[0]


def test_token_limit_ends_the_play_and_toolsandbox_scores_it(ts_env, gold_roles, validate, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("TOOLSANDBOX_SERVERS", "1")
    full = _run(validate, gold_roles, tmp_path / "full")
    assert full["status"] == "ok" and full["score"] == 1.0, full["error"]
    used = full["usage"]["by_purpose"]["executor"]  # the user's one call comes at the end
    tokens = used["prompt_tokens"] + used["completion_tokens"]

    cut = _run(validate, gold_roles, tmp_path / "cut", "--episode-max-tokens", str(tokens // 2))
    assert cut["status"] == "ok" and cut["error"] is None
    assert cut["termination"] == "limit:tokens"
    assert cut["score_info"]["exception_type"] is None  # evaluated, not scored as a crash
    assert "milestone_mapping" in cut["score_info"]
    assert cut["score"] < 1.0
    assert 0 < cut["turns"] < full["turns"]


def test_time_limit_before_execution_scores_the_untouched_scenario(ts_env, gold_roles, validate,
                                                                   tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSANDBOX_SERVERS", "1")
    record = _run(validate, gold_roles, tmp_path / "time", "--episode-timeout", "0.000001")
    assert record["status"] == "ok" and record["error"] is None
    assert record["termination"] == "limit:time"
    assert record["score_info"]["exception_type"] is None
    assert record["score"] == 0.0  # nothing done: no milestone reached
    assert record["usage"]["total"]["calls"] == 0  # every call refused (the opening is scripted)
