"""Benchmark environments. Each adapter turns a benchmark's tasks into a ``TaskView`` and a
``Supervision`` and plays episodes with the benchmark's own loop and evaluator.

Lives here: the boundary types (``envs.base``), the registry of environments
(``envs.registry``), the env-server protocol and its client (``envs.protocol``,
``envs.server_client``), the adapters (``envs.tau2``, ``envs.toolsandbox``) and the container
launcher (``envs.docker``). May import: third-party libraries only; never ``evrcore``, ``planners``, ``critique``
or ``runtime`` (environments know nothing of plans), which an import-linter contract checks.
"""

import os


def use_bundled_price_map() -> None:
    """Tell litellm to read its bundled price map instead of fetching one from the network when
    it is imported. The one place the project's packages set this: it must run before anything
    imports litellm (τ²'s user simulator and metrics do, on import), so this package, which every
    other one imports first, calls it on import; ``runtime`` calls it again to say so."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def reads_bundled_price_map() -> bool:
    """Whether litellm reads its bundled price map (the switch above is on): then its prices
    change only with its version, and a command may remember them (``runtime.llm.prices``)."""
    return os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() == "true"


use_bundled_price_map()

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

from envs.registry import ENVIRONMENTS, SANDBOXES, EnvSpec, get_environment  # noqa: E402

__all__ = [
    "AgentTurn",
    "ChatMessage",
    "ENVIRONMENTS",
    "Environment",
    "EnvError",
    "EnvSpec",
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
