"""A holistic plan, in the Agent Planning Benchmark's format.

APB writes a plan as ``{"plan": str, "tool_chain": [{"name", "parameter_description",
"reason"}]}``, where APB's own prompt asks for ``parameter_description`` as an object mapping
parameter names to descriptions; other planners write it as one string. Both are kept exactly
as given, so APB plans round-trip unchanged and plans move between this runtime and APB's
tools. Tool names the task does not offer are kept (the plan is the model's) but flagged.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envs.base import TaskView

ParameterDescription = str | dict[str, Any]
"""APB's object form (parameter name → description) or a free-text description."""


class ToolStep(BaseModel):
    # Fields beyond APB's three are kept, not dropped, so an APB plan comes back unchanged.
    model_config = ConfigDict(extra="allow")

    name: str
    parameter_description: ParameterDescription = ""
    reason: str = ""

    def parameters_text(self) -> str:
        """The parameter description as one line of text, whichever form it was given in."""
        described = self.parameter_description
        if isinstance(described, str):
            return described
        return "; ".join(
            f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
            for name, value in described.items()
        )


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
        if not isinstance(data, dict):
            raise TypeError(f"an APB plan is a JSON object, got {type(data).__name__}")
        chain = data.get("tool_chain") or []
        if not isinstance(chain, list):
            raise TypeError(f"tool_chain must be a list of steps, got {type(chain).__name__}")
        return cls(plan=data["plan"], tool_chain=[ToolStep.model_validate(s) for s in chain])

    def render(self) -> str:
        """The plan as text for a prompt."""
        lines = [self.plan.strip()]
        for i, step in enumerate(self.tool_chain, 1):
            line = f"{i}. {step.name}"
            parameters = step.parameters_text()
            if parameters:
                line += f" — parameters: {parameters}"
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
"""What the built-in planner is asked for (a string description keeps constrained decoding
simple); ``Plan`` itself also accepts APB's object form from any other planner."""
