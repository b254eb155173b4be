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


def get_environment(name: str, sandbox: str = "inproc") -> Environment:
    """The environment adapter called ``name``, its env servers placed as ``sandbox`` says."""
    env_spec = spec(name)
    if sandbox not in SANDBOXES:
        raise UnknownTaskError(f"unknown sandbox {sandbox!r}; accepted: {', '.join(SANDBOXES)}")
    if sandbox != "inproc":
        from envs.docker import docker_environment

        env = docker_environment(name, demanded=sandbox == "docker")
        if env is not None:
            return env
    return env_spec.create()
