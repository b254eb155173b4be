"""The planner interface: make a plan from a task view, revise it given a critique.

A planner receives a ``TaskView`` (never a ``Supervision``), a ``Plan`` and a ``Critique``,
so by construction it cannot read the hidden reference.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evrcore.critique import AnyCritique
from envs.base import TaskView
from evrcore.plan import Plan


@runtime_checkable
class Planner(Protocol):
    def plan(self, view: TaskView) -> Plan:
        """A holistic plan ``p0`` for the task."""
        ...

    def revise(self, view: TaskView, plan: Plan, critique: AnyCritique) -> Plan:
        """A revised plan ``p1`` given the critique of ``plan``."""
        ...
