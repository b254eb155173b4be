"""The environments this runtime knows, and how to get one placed where the user asked.

The table itself is ``envs.specs.ENVIRONMENTS`` (re-exported here). Every list of environments elsewhere — the CLI's ``--env`` choices, the config's accepted
values, the container launcher's image targets and fallbacks, ``python -m runtime.envs setup``
— is derived from ``ENVIRONMENTS``, so adding a benchmark is one entry here plus its adapter.
Adapters are named by import path and imported on first use, so each benchmark's dependencies
stay optional.
"""

from __future__ import annotations

from envs.base import Environment, UnknownTaskError
from envs.specs import ENVIRONMENTS, SANDBOXES, EnvSpec, names, remembered_catalogue, spec

__all__ = ["ENVIRONMENTS", "SANDBOXES", "EnvSpec", "get_environment", "names",
           "remembered_catalogue", "spec"]


def get_environment(name: str, sandbox: str = "inproc", **options) -> Environment:
    """The environment adapter called ``name``, its env servers placed as ``sandbox`` says;
    ``options`` (τ³'s ``retrieval``) go to adapters that take them (None: the default)."""
    env_spec = spec(name)
    if sandbox not in SANDBOXES:
        raise UnknownTaskError(f"unknown sandbox {sandbox!r}; accepted: {', '.join(SANDBOXES)}")
    unknown = sorted(k for k, v in options.items() if v is not None and k not in env_spec.options)
    if unknown:
        raise UnknownTaskError(f"--{unknown[0]} applies to --env "
                               f"{', '.join(n for n, s in ENVIRONMENTS.items() if unknown[0] in s.options)} only")
    if sandbox != "inproc" and env_spec.container_target is None:
        if sandbox == "docker":
            raise UnknownTaskError(f"--sandbox docker: {name} has no container image; use --sandbox "
                                   f"inproc (its env servers run in their own venv)")
        sandbox = "inproc"
    if sandbox != "inproc":
        from envs.docker import docker_environment

        env = docker_environment(name, demanded=sandbox == "docker")
        if env is not None:
            return env
    return env_spec.create(**{k: v for k, v in options.items() if k in env_spec.options})
