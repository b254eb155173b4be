"""Benchmark environments. Each adapter turns a benchmark's tasks into a ``TaskView`` and a
``Supervision`` and plays episodes with the benchmark's own loop and evaluator.

This package never imports ``critique`` or ``planners``: environments know nothing of plans.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import time

from envs.base import (  # noqa: E402
    AgentTurn,
    ChatMessage,
    Environment,
    EnvError,
    Score,
    Trajectory,
    ReferenceAction,
    Supervision,
    TaskSelection,
    TaskView,
    ToolSchema,
    UnknownTaskError,
    UserTurn,
)

ENVIRONMENTS = ("tau2", "toolsandbox")


def get_environment(name: str) -> Environment:
    """The environment adapter called ``name``; imports lazily so each env's deps stay optional."""
    if name == "tau2":
        from envs.tau2 import Tau2Environment

        return Tau2Environment()
    if name == "toolsandbox":
        from envs.toolsandbox import ToolSandboxEnvironment

        return ToolSandboxEnvironment()
    raise UnknownTaskError(f"unknown env {name!r}; accepted: {', '.join(ENVIRONMENTS)}")


__all__ = [
    "AgentTurn",
    "ChatMessage",
    "ENVIRONMENTS",
    "Environment",
    "EnvError",
    "Score",
    "Trajectory",
    "ReferenceAction",
    "Supervision",
    "TaskSelection",
    "TaskView",
    "ToolSchema",
    "UnknownTaskError",
    "UserTurn",
    "get_environment",
]
