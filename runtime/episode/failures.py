"""What kind of failure ended an episode, so the reports can tell the environment or the model
endpoint failing apart from the agent failing the task.

``infrastructure``: a model endpoint that stayed down or timed out, an env server or container
that crashed, hung or could not start — nothing the tested model did. ``model_output``: a model
answered, but with something unusable (a plan, critique or turn that could not be parsed, a
planner returning no plan) — the agent's failure. ``internal``: anything else, most likely a bug.
The kind is derived from the exception and the exceptions that caused it.

Within a kind, the *cause* says what was seen, from one table (:data:`CAUSES`) that the summary,
the report and their warnings all count by: an HTTP 400 is the endpoint refusing the request
(``http_4xx``, infrastructure), not a bug of ours.
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

MODEL_OUTPUT = (PlanParseError, CriticError, PlannerLoadError, ValidationError, json.JSONDecodeError)
MODEL_OUTPUT_NAMES = {"AgentTurnFailed"}
"""Matched by name: τ²'s adapter (``envs.tau2.episode``) is not imported just to classify."""


CAUSES: dict[str, tuple[ErrorKind, str]] = {
    "http_4xx": ("infrastructure", "the endpoint refused the request: HTTP 4xx other than "
                 "authentication (400, 404, 413, 422, 429 rate limit, ...)"),
    "http_5xx": ("infrastructure", "the endpoint failed: HTTP 5xx"),
    "timeout": ("infrastructure", "a model request or an env server took longer than its limit"),
    "connection": ("infrastructure", "no HTTP answer: connection refused, reset or dropped"),
    "bad_response": ("infrastructure", "HTTP 200 without a usable completion (no choices, no "
                     "message)"),
    "worker_lost": ("infrastructure", "the Ray worker or node running the episode died on every "
                    "try"),
    "environment": ("infrastructure", "an env server or container crashed, hung or could not start"),
    "auth": ("infrastructure", "credentials rejected (HTTP 401/403); stops the run"),
    "provider_blocked": ("infrastructure", "the provider withheld the answer on every try (a "
                         "safety filter: runtime.llm.provider_rules)"),
    "malformed_output": ("model_output", "the model answered with something unusable: a plan, "
                         "critique or turn that could not be parsed"),
    "internal": ("internal", "anything else, most likely a bug"),
}
"""cause → (kind, what it means): the one table of error kinds."""


def _chain(exc: BaseException) -> list[BaseException]:
    chain = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def error_cause(exc: BaseException) -> str:
    """The row of :data:`CAUSES` for ``exc``, looking through the exceptions that caused it:
    what the transport saw first (a timeout, no connection, an HTTP status), then the
    environment, then the model's output; ``internal`` when nothing matches."""
    import httpx

    from runtime.llm.layer import MalformedResponse, is_connection_failure

    chain = _chain(exc)
    for e in chain:  # an error that knows its kind (the model layer's ProviderFault) says so
        declared = getattr(e, "error_kind", None)
        if declared == "model_output":
            return "malformed_output"
        if declared == "infrastructure":
            return "provider_blocked"
    if any(isinstance(e, (EnvServerError, EnvUnavailableError))
           or type(e).__module__.startswith("docker.") for e in chain):
        return "environment"
    if any(isinstance(e, (litellm.exceptions.Timeout, TimeoutError, httpx.TimeoutException))
           for e in chain):
        return "timeout"
    if is_connection_failure(exc):
        return "connection"
    if (any(type(e).__module__.startswith("litellm") for e in chain)
            and any(isinstance(e, json.JSONDecodeError) for e in chain)):
        return "bad_response"  # HTTP 200 whose body is no JSON: litellm calls it a 500
    for e in chain:
        status = _status(e)
        if isinstance(e, litellm.exceptions.AuthenticationError) or status in (401, 403):
            return "auth"
        if status is not None and 400 <= status < 500:
            return "http_4xx"
        if status is not None and status >= 500:
            return "http_5xx"
    if any(isinstance(e, MalformedResponse) for e in chain):
        return "bad_response"
    if any(isinstance(e, MODEL_OUTPUT) or type(e).__name__ in MODEL_OUTPUT_NAMES for e in chain):
        return "malformed_output"
    return "internal"


def error_kind(exc: BaseException) -> ErrorKind:
    """The kind of ``exc``: its cause's row of :data:`CAUSES` (an infrastructure cause anywhere
    in the chain wins: a model error that gave up after retrying a dropped connection is the
    network's)."""
    return CAUSES[error_cause(exc)][0]


def classify(exc: BaseException) -> dict[str, str]:
    """``{"kind": ..., "cause": ...}`` of ``exc``, as a ``StageError`` records them."""
    cause = error_cause(exc)
    return {"kind": CAUSES[cause][0], "cause": cause}
