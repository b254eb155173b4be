"""A holistic plan, in the Agent Planning Benchmark's format.

APB writes a plan as ``{"plan": str, "tool_chain": [{"name", "parameter_description",
"reason"}]}``. Reading and writing exactly that lets plans move between this runtime and APB's
tools. Tool names the task does not offer are kept (the plan is the model's) but flagged.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envs.base import TaskView


class ToolStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    parameter_description: str = ""
    reason: str = ""


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str
    tool_chain: list[ToolStep] = Field(default_factory=list)
    unknown_tools: list[str] = Field(
        default_factory=list,
        description="Tool names in the chain that the task view does not offer (flagged, kept).",
    )

    def checked_against(self, view: TaskView) -> "Plan":
        """The plan with ``unknown_tools`` set from the view's tool list."""
        offered = set(view.tool_names)
        unknown = sorted({s.name for s in self.tool_chain if s.name not in offered})
        return self.model_copy(update={"unknown_tools": unknown})

    def to_apb(self) -> dict[str, Any]:
        return {"plan": self.plan, "tool_chain": [s.model_dump() for s in self.tool_chain]}

    @classmethod
    def from_apb(cls, data: dict[str, Any] | str) -> "Plan":
        if isinstance(data, str):
            data = json.loads(data)
        return cls(plan=data["plan"], tool_chain=[ToolStep(**s) for s in data.get("tool_chain", [])])

    def render(self) -> str:
        """The plan as text for a prompt."""
        lines = [self.plan.strip()]
        for i, step in enumerate(self.tool_chain, 1):
            line = f"{i}. {step.name}"
            if step.parameter_description:
                line += f" — parameters: {step.parameter_description}"
            if step.reason:
                line += f" — why: {step.reason}"
            lines.append(line)
        return "\n".join(lines)


PLAN_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan": {"type": "string"},
        "tool_chain": {
            "type": "array",
            "maxItems": 12,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "parameter_description": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["name", "parameter_description", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["plan", "tool_chain"],
    "additionalProperties": False,
}
