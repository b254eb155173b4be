"""A test plug-in planner that answers in APB's own plan format: each step's
``parameter_description`` is an object mapping parameter names to descriptions, exactly as
APB's holistic prompt asks for it. It makes no model calls; it returns plain dicts, as a
planner wrapping APB's tooling would."""

from __future__ import annotations

REVISION_NOTE = " Confirm every detail with the user before any write."


class ApbFormatPlanner:
    def __init__(self, model=None):
        self.model = model  # unused

    def plan(self, view):
        first = next(iter(view.tool_names), "lookup")
        return {
            "plan": "Identify the user, look up what the request is about, then act.",
            "tool_chain": [
                {"name": first,
                 "parameter_description": {"user_id": "the id the user gives",
                                           "filters": {"kind": "from the request"}},
                 "reason": "find the records the request is about"},
                {"name": "not_a_real_tool", "parameter_description": {}, "reason": "APB allows any name"},
            ],
        }

    def revise(self, view, plan, critique, reviewer="critic-with-reference"):
        data = plan.to_apb()
        data["plan"] += REVISION_NOTE + f" (reviewed by: {reviewer})"
        return data
