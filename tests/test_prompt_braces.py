"""Filled-in text is never read as template syntax: a user who writes ``{{order}}`` (or a
policy or tool schema holding braces) gets a plan, not a crash."""

from __future__ import annotations

import json

import pytest

from envs.base import TaskView
from evrcore.chat import ChatReply
from evrcore.critique import Critique
from evrcore.prompts import render
from planners.llm import LLMPlanner

BRACED = TaskView(
    env="tau2", domain="d", task_id="t", policy="Never echo {{secret}} or {{", opening_request=
    "Please change {{order}} and {{policy}} — then }} {{", tools=[{"type": "function", "function": {
        "name": "lookup", "description": "finds {{id}}", "parameters": {}}}])


class Replies:
    """A ChatModel double answering from a list; records what it was asked."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, messages, *, tools=None, json_schema=None):
        self.prompts.append(messages[-1]["content"])
        return ChatReply(content=self.answers.pop(0))


def test_plan_and_revise_keep_braces_in_filled_text_verbatim():
    apb = json.dumps({"plan": "p", "tool_chain": [{"name": "lookup", "reason": "r"}]})
    model = Replies(apb, apb)
    planner = LLMPlanner(model)
    p0 = planner.plan(BRACED)
    critique = Critique(grade=0.4, errors={f"E{i}": False for i in range(1, 7)},
                        rationale="about {{order}}")
    planner.revise(BRACED, p0, critique)
    first, second = model.prompts
    assert "Please change {{order}} and {{policy}} — then }} {{" in first
    # The request's "{{policy}}" was not replaced by the policy: one pass over the template.
    assert first.count("Never echo {{secret}} or {{") == 1
    assert "finds {{id}}" in first and "about {{order}}" in second


def test_a_placeholder_of_the_template_left_unfilled_is_still_an_error():
    with pytest.raises(KeyError, match=r"\{\{request\}\}"):
        render("planners", "plan", policy="p", tools="t")

