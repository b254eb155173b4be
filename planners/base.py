"""The planner interface: make a plan from a task view, revise it given a critique.

A planner receives a ``TaskView`` (never a ``Supervision``), a ``Plan`` and a ``Critique``,
so by construction it cannot read the hidden reference.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evrcore.critique import AnyCritique, Reviewer
from envs.base import TaskView
from evrcore.plan import Plan


@runtime_checkable
class Planner(Protocol):
    def plan(self, view: TaskView) -> Plan:
        """A holistic plan ``p0`` for the task."""
        ...

    def revise(self, view: TaskView, plan: Plan, critique: AnyCritique,
               reviewer: Reviewer = "critic-with-reference") -> Plan:
        """A revised plan ``p1`` given the critique of ``plan`` and who wrote it (a planner may
        leave ``reviewer`` out of its signature; it is then not passed)."""
        ...
