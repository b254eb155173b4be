"""What APB's holistic judge is given, built from a task: the full tool schemas, and the
reference solution as an APB plan and tool chain, derived from the benchmark's own
reference actions, so the judge and the critic get the reference in the form APB's holistic
judge gets it (a ``plan`` text and a ``tool_chain``).

τ²-bench gives its reference actions (the agent's calls, and on telecom the user's own actions
on the phone); ToolSandbox's adapter turns its milestones into the tool calls they name. The
agent's calls become the tool chain, each step's ``parameter_description`` the reference
arguments; what the user does and the outcome checks go into the plan text, because the agent
cannot call the user's tools. The benchmark-specific supervision (hidden user instructions,
outcome checks in full) still goes to the judge beside this, as before.
"""

from __future__ import annotations

import json

from envs.base import Supervision, TaskView
from evrcore.plan import Plan, ToolStep


def reference_plan(supervision: Supervision) -> Plan:
    """The reference as an APB plan (empty chain and a plain plan text when there is none)."""
    chain: list[ToolStep] = []
    lines: list[str] = []
    for action in supervision.reference_actions:
        arguments = json.dumps(action.arguments, ensure_ascii=False, sort_keys=True)
        if action.requestor == "assistant":
            chain.append(ToolStep(name=action.name, parameter_description=dict(action.arguments),
                                  reason=f"reference step {len(lines) + 1}"))
            lines.append(f"{len(lines) + 1}. The agent calls {action.name} with {arguments}.")
        else:
            lines.append(f"{len(lines) + 1}. The {action.requestor} performs {action.name} with "
                         f"{arguments} (not an agent tool: the agent guides the {action.requestor}).")
    outcomes = [f"- {o}" for o in supervision.expected_outcomes]
    if not lines and not outcomes:
        return Plan(plan="The benchmark gives no reference actions or outcome checks for this task.")
    text = []
    if lines:
        text.append("Reference solution, from the benchmark's reference actions:\n" + "\n".join(lines))
    else:
        text.append("The benchmark gives no reference actions for this task (solving it may need "
                    "no tool call).")
    if outcomes:
        text.append("The task is solved when:\n" + "\n".join(outcomes))
    return Plan(plan="\n\n".join(text), tool_chain=chain)


def tools_text(view: TaskView) -> str:
    """The task's tools as their full schemas (APB's judge gets them as ``available_tools``)."""
    return json.dumps(view.tools, indent=2, ensure_ascii=False) if view.tools else "(no tools)"
