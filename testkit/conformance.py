"""A conformance kit for planner plug-ins, to run in a planner developer's own test suite:

    from testkit.conformance import assert_planner_conforms
    def test_my_planner():
        assert_planner_conforms("mypkg.planning:MyPlanner")

It builds the planner with a scripted model (which answers every request with a valid APB
plan), then checks it against offline task shapes — every τ²-bench domain's real policy and
tools, a task with no tools, a task with no opening request: ``plan`` returns a plan with text,
``revise`` returns a plan for a taxonomy critique and for a free-text one, nothing crashes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from evrcore.critique import Critique, ErrorFlags, FreeCritique
from envs.base import TaskView
from planners import registry
from evrcore.chat import ChatReply
from evrcore.plan import Plan

DEFAULT_DOMAINS = ("airline", "retail", "telecom", "mock")
_APB = {"plan": "Look up the records, confirm with the user, then act.",
        "tool_chain": [{"name": "lookup", "parameter_description": "from the user", "reason": "find it"}]}


class PlanAnsweringModel:
    """A ChatModel double: answers every request with the same valid APB plan."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, *, tools=None, json_schema=None) -> ChatReply:
        self.calls += 1
        return ChatReply(content=json.dumps(_APB))


@dataclass
class ConformanceReport:
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def task_shapes(domains: tuple[str, ...] = DEFAULT_DOMAINS) -> list[tuple[str, TaskView]]:
    from envs.tau2 import tasks as tau2_tasks

    shapes = []
    for domain in domains:
        policy, tools = tau2_tasks.policy_and_tools(domain)
        shapes.append((f"tau2/{domain}", TaskView(env="tau2", domain=domain, task_id="conformance",
                                                  policy=policy, tools=tools,
                                                  opening_request="Hi, I need help with my booking.")))
    shapes.append(("no tools", TaskView(env="none", domain="none", task_id="empty", policy="Be helpful.",
                                        tools=[], opening_request="Hello?")))
    shapes.append(("no opening request", TaskView(env="none", domain="none", task_id="silent",
                                                  policy="", tools=shapes[0][1].tools if shapes else [])))
    return shapes


CRITIQUES = [
    Critique(grade=0.4, errors=ErrorFlags(E1=False, E2=True, E3=True, E4=False, E5=False, E6=False),
             rationale="The plan stops before the request is complete and skips a policy check."),
    FreeCritique(rationale="The plan never confirms with the user before acting."),
]


def check_planner(planner: str | Callable[..., Any], domains: tuple[str, ...] = DEFAULT_DOMAINS) -> ConformanceReport:
    report = ConformanceReport()
    name = planner if isinstance(planner, str) else getattr(planner, "__name__", repr(planner))
    try:
        factory = registry.load(planner) if isinstance(planner, str) else planner
        adapted = registry.build(factory, PlanAnsweringModel(), name)
    except Exception as exc:  # noqa: BLE001 - every failure is a finding
        report.problems.append(f"cannot build planner {name!r}: {exc}")
        return report
    for label, view in task_shapes(domains):
        try:
            plan = adapted.plan(view)
        except Exception as exc:  # noqa: BLE001
            report.problems.append(f"plan() raised {type(exc).__name__} on task shape '{label}': {exc}")
            continue
        if not plan.plan.strip():
            report.problems.append(f"plan() returned a plan with no text on task shape '{label}'")
        report.checked.append(f"plan: {label}")
        for critique in CRITIQUES:
            kind = type(critique).__name__
            try:
                revised = adapted.revise(view, plan, critique)
            except Exception as exc:  # noqa: BLE001
                report.problems.append(
                    f"revise() raised {type(exc).__name__} on task shape '{label}' with a {kind}: {exc}")
                continue
            if not isinstance(revised, Plan) or not revised.plan.strip():
                report.problems.append(f"revise() returned no usable plan on '{label}' with a {kind}")
            report.checked.append(f"revise ({kind}): {label}")
    return report


def assert_planner_conforms(planner: str | Callable[..., Any], domains: tuple[str, ...] = DEFAULT_DOMAINS) -> ConformanceReport:
    report = check_planner(planner, domains)
    if not report.ok:
        raise AssertionError("planner does not conform:\n- " + "\n- ".join(report.problems))
    return report
