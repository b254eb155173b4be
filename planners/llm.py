"""The default planner: the tested model writes an APB holistic plan as constrained JSON."""

from __future__ import annotations

import json

from evrcore.critique import REVIEWERS, AnyCritique, Reviewer
from envs.base import TaskView
from evrcore.chat import ChatModel, extract_json
from evrcore.plan import PLAN_JSON_SCHEMA, Plan
from evrcore.prompts import render


class PlanParseError(ValueError):
    """The model's plan could not be parsed after the allowed attempts."""


class LLMPlanner:
    """Plans and revises with one chat model (the tested model)."""

    def __init__(self, model: ChatModel, attempts: int = 3):
        self.model = model
        self.attempts = attempts

    def plan(self, view: TaskView) -> Plan:
        prompt = render("planners", "plan", **_view_fields(view))
        return self._ask(prompt, view)

    def revise(self, view: TaskView, plan: Plan, critique: AnyCritique,
               reviewer: Reviewer = "critic-with-reference") -> Plan:
        prompt = render(
            "planners",
            "revise",
            **_view_fields(view),
            plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False),
            reviewer=REVIEWERS[reviewer],
            critique=critique.render(),
        )
        return self._ask(prompt, view)

    def _ask(self, prompt: str, view: TaskView) -> Plan:
        messages = [{"role": "user", "content": prompt}]
        problem = ""
        for _ in range(self.attempts):
            reply = self.model.complete(messages, json_schema=PLAN_JSON_SCHEMA)
            try:
                return Plan.from_apb(extract_json(reply.content)).checked_against(view)
            except (ValueError, KeyError, TypeError) as exc:
                problem = str(exc)
                messages = messages + [
                    reply.as_message(),
                    {
                        "role": "user",
                        "content": f"That was not a valid plan ({problem[:200]}). Answer with one "
                        'JSON object {"plan": ..., "tool_chain": [...]} and nothing else.',
                    },
                ]
        raise PlanParseError(f"no valid plan after {self.attempts} attempts: {problem}")


def _view_fields(view: TaskView) -> dict[str, str]:
    tools = "\n".join(
        f"- {t['function']['name']}: {t['function'].get('description', '').strip()} "
        f"parameters: {json.dumps(t['function'].get('parameters', {}).get('properties', {}))}"
        for t in view.tools
    ) or "(no tools)"
    return {
        "policy": view.policy,
        "tools": tools,
        "request": view.opening_request or "(the user has not said anything yet)",
    }
