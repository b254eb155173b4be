"""The critic's closed schema and retries; APB plan format round trips; unknown tools flagged."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from critique.critic import anti_leak_critic, CriticError
from evrcore.critique import Critique
from envs.base import Supervision, TaskView
from evrcore.chat import ChatReply
from planners.llm import LLMPlanner, PlanParseError
from evrcore.plan import Plan

FLAGS = {f"E{i}": False for i in range(1, 7)}
VIEW = TaskView(env="tau2", domain="d", task_id="t", policy="p", opening_request="help",
                tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}])


class Replies:
    """A ChatModel double answering from a list; records what it was asked."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.requests: list[list[dict]] = []

    def complete(self, messages, *, tools=None, json_schema=None):
        self.requests.append(messages)
        return ChatReply(content=self.answers.pop(0))


def test_critique_schema_is_closed():
    ok = {"grade": 0.4, "errors": FLAGS, "rationale": "r"}
    assert Critique.model_validate(ok).grade == 0.4
    with pytest.raises(ValidationError):
        Critique.model_validate({**ok, "hint": "the id is X"})
    with pytest.raises(ValidationError):
        Critique.model_validate({**ok, "grade": 0.5})
    with pytest.raises(ValidationError):
        Critique.model_validate({**ok, "errors": {**FLAGS, "E7": True}})
    with pytest.raises(ValidationError):
        Critique.model_validate({"grade": 1.0, "errors": FLAGS})


def test_critic_retries_malformed_output_then_succeeds():
    good = json.dumps({"grade": 0.8, "errors": {**FLAGS, "E5": True}, "rationale": "wrong tool"})
    model = Replies("no json", json.dumps({"grade": 3}), good)
    result = anti_leak_critic(model).critique(VIEW, Supervision(task_id="t"), Plan(plan="x"))
    assert result.critique.errors.E5 and result.attempts == 3
    assert "required format" in model.requests[-1][-1]["content"]


def test_critic_gives_up_after_its_attempts():
    with pytest.raises(CriticError, match="3 malformed"):
        anti_leak_critic(Replies("a", "b", "c")).critique(VIEW, Supervision(task_id="t"), Plan(plan="x"))


def test_apb_plan_round_trip_and_unknown_tools_are_flagged_not_dropped():
    apb = {"plan": "do it", "tool_chain": [
        {"name": "lookup", "parameter_description": "id from user", "reason": "find it"},
        {"name": "teleport", "parameter_description": "", "reason": "magic"}]}
    plan = Plan.from_apb(json.dumps(apb)).checked_against(VIEW)
    assert plan.to_apb() == apb
    assert plan.unknown_tools == ["teleport"]
    assert [s.name for s in plan.tool_chain] == ["lookup", "teleport"]


def test_planner_parses_fenced_json_and_retries_garbage():
    apb = {"plan": "p", "tool_chain": []}
    planner = LLMPlanner(Replies("I think...", "```json\n" + json.dumps(apb) + "\n```"))
    assert planner.plan(VIEW).plan == "p"
    with pytest.raises(PlanParseError):
        LLMPlanner(Replies("x", "y", "z")).plan(VIEW)
