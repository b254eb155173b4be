"""What kind of failure ended an episode, so the reports can tell the environment or the model
endpoint failing apart from the agent failing the task.

``infrastructure``: a model endpoint that stayed down or timed out, an env server or container
that crashed, hung or could not start — nothing the tested model did. ``model_output``: a model
answered, but with something unusable (a plan, critique or turn that could not be parsed, a
planner returning no plan) — the agent's failure. ``internal``: anything else, most likely a bug.
The kind is derived from the exception and the exceptions that caused it.
"""

from __future__ import annotations

import json
from typing import Literal

import litellm
from pydantic import ValidationError

from critique.critic import CriticError
from envs.server_client import EnvServerError, EnvUnavailableError
from planners.llm import PlanParseError
from planners.registry import PlannerLoadError

ErrorKind = Literal["infrastructure", "model_output", "internal"]
KINDS: tuple[str, ...] = ("infrastructure", "model_output", "internal")

INFRASTRUCTURE = (
    litellm.exceptions.RateLimitError,
    litellm.exceptions.InternalServerError,
    litellm.exceptions.ServiceUnavailableError,
    litellm.exceptions.APIConnectionError,
    litellm.exceptions.Timeout,
    litellm.exceptions.BadGatewayError,
    EnvServerError,
    EnvUnavailableError,
    ConnectionError,
    TimeoutError,
)
MODEL_OUTPUT = (PlanParseError, CriticError, PlannerLoadError, ValidationError, json.JSONDecodeError)
MODEL_OUTPUT_NAMES = {"AgentTurnFailed"}
"""Matched by name: τ²'s adapter (``envs.tau2.episode``) is not imported just to classify."""


def error_kind(exc: BaseException) -> ErrorKind:
    """The kind of ``exc``, looking through its causes: an infrastructure cause anywhere in the
    chain wins (a model error that gave up after retrying a dropped connection is the network's)."""
    chain = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    for e in chain:  # an error that knows its kind (the model layer's ProviderFault) says so
        declared = getattr(e, "error_kind", None)
        if declared in KINDS:
            return declared
    if any(isinstance(e, INFRASTRUCTURE) or type(e).__module__.startswith("docker.") for e in chain):
        return "infrastructure"
    if any(isinstance(e, MODEL_OUTPUT) or type(e).__name__ in MODEL_OUTPUT_NAMES for e in chain):
        return "model_output"
    return "internal"
