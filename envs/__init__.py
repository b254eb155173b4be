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


SANDBOXES = ("inproc", "auto", "docker")


def get_environment(name: str, sandbox: str = "inproc") -> Environment:
    """The environment adapter called ``name``; imports lazily so each env's deps stay optional.

    ``sandbox``: ``inproc`` — no container (τ²-bench in this interpreter, ToolSandbox in its own
    venv); ``docker`` — env servers in containers (``envs.docker_launcher``), exit 2 if no engine;
    ``auto`` — containers when an engine is reachable, else one line on stderr and ``inproc``.
    """
    if name not in ENVIRONMENTS:
        raise UnknownTaskError(f"unknown env {name!r}; accepted: {', '.join(ENVIRONMENTS)}")
    if sandbox not in SANDBOXES:
        raise UnknownTaskError(f"unknown sandbox {sandbox!r}; accepted: {', '.join(SANDBOXES)}")
    if sandbox != "inproc":
        from envs.docker_launcher import docker_environment

        env = docker_environment(name, demanded=sandbox == "docker")
        if env is not None:
            return env
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
    "SANDBOXES",
    "Supervision",
    "TaskSelection",
    "TaskView",
    "ToolSchema",
    "UnknownTaskError",
    "UserTurn",
    "get_environment",
]
