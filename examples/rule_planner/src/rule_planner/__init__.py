"""A rule-based planner: look things up first, confirm, then act — no model calls at all.

It exists to show the planner protocol end to end: a class that takes the tested model (and
may ignore it), returns APB-format plans, and revises them from a critique's error flags.
"""

from __future__ import annotations

import re

from planners import Plan, ToolStep

READ_PREFIXES = ("get_", "find_", "search_", "list_", "check_", "calculate")


class RulePlanner:
    def __init__(self, model=None):
        self.model = model  # unused: this planner is rules only

    def plan(self, view) -> Plan:
        words = set(re.findall(r"[a-z]+", (view.opening_request or "").lower()))
        reads = [n for n in view.tool_names if n.startswith(READ_PREFIXES)]
        relevant = [n for n in reads if words & set(n.split("_"))] or reads[:2]
        steps = [ToolStep(name=n, parameter_description="values the user gave or earlier results",
                          reason="look up what the request is about") for n in relevant[:3]]
        return Plan(plan="Look up what the request is about, check it against the policy, confirm "
                         "with the user, then act.", tool_chain=steps)

    def revise(self, view, plan: Plan, critique) -> Plan:
        errors = getattr(critique, "errors", None)
        note = " Re-read the policy before acting." if errors and errors.E3 else ""
        if errors and errors.E2:
            note += " Do not stop until every part of the request is done."
        return plan.model_copy(update={"plan": plan.plan + (note or " Double-check each step.")})
