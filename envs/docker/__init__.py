"""The ``docker`` launcher: env servers in containers, through the Docker SDK for Python.

``--sandbox docker`` (or ``sandbox: docker`` in a config) runs an environment's env server
(:mod:`envs.protocol`) in a container instead of this interpreter (τ²-bench) or a local venv
(ToolSandbox), attached through the engine's API (``attach_socket``), not a ``docker`` CLI. Which
image target and which fallback launcher an environment has comes from :mod:`envs.registry`.

* :mod:`envs.docker.engine` — connect (one-line errors), owner labels, sweep of stale containers;
* :mod:`envs.docker.images` — Dockerfile stages, build inputs and their hash, base image, build;
* :mod:`envs.docker.container` — one container as a ``Popen``-like process over a socket;
* :mod:`envs.docker.environment` — server, pool, launcher, environment, cleanup on exit;
* :mod:`envs.docker.cli` — ``python -m envs.docker build|tag|status|clean``.

No engine: :func:`connect` raises :class:`DockerUnavailable` with a one-line reason; in ``auto``
mode the caller says so in one line and uses the other launcher, when docker was demanded the CLI
exits 2 with that line.

Settings (environment variables): ``EVR_DOCKER_BASE_IMAGE`` (default: ``python:3.11-slim`` if the
engine has it, else ``evr-base:local``, which ``scripts/docker-ci.sh`` builds, else
``python:3.11-slim`` pulled), ``EVR_DOCKER_WHEELS`` (a folder of wheels to install offline from),
``EVR_DOCKER_CA_BUNDLE`` (a CA bundle for pip during the build; default: ``PIP_CERT``/
``SSL_CERT_FILE`` if set), ``EVR_DOCKER_MEMORY`` (``2g``), ``EVR_DOCKER_CPUS`` (``1``),
``EVR_DOCKER_PIDS`` (``512``), ``EVR_DOCKER_SERVERS`` (pool size, ``4``), ``EVR_DOCKER_LOGS``
(log dir before a run sets one).

May import: ``envs`` modules and third-party libraries (the Docker SDK lazily: without it, or
without an engine, nothing here fails at import time).
"""

from envs.docker.container import ContainerProcess, ContainerSpec, LineQueue, demux_lines
from envs.docker.engine import (
    ENV_LABEL,
    HASH_LABEL,
    LABEL,
    OWNER_LABEL,
    DockerUnavailable,
    connect,
    owner_id,
    sweep_stale,
)
from envs.docker.environment import (
    DockerEnvironment,
    DockerEnvServer,
    DockerLauncher,
    DockerServerPool,
    close_all,
    docker_environment,
)
from envs.docker.images import (
    BASE_IMAGE_VAR,
    DEFAULT_BASE_IMAGE,
    LOCAL_BASE_IMAGE,
    TARGETS,
    BuildInputs,
    ImageBuildError,
    Target,
    build_image,
    build_inputs,
    choose_base_image,
    dockerfile_for,
    dockerfile_stages,
    ensure_image,
    image_exists,
)

__all__ = [
    "BASE_IMAGE_VAR", "DEFAULT_BASE_IMAGE", "ENV_LABEL", "HASH_LABEL", "LABEL", "LOCAL_BASE_IMAGE",
    "OWNER_LABEL", "TARGETS", "BuildInputs", "ContainerProcess", "ContainerSpec",
    "DockerEnvServer", "DockerEnvironment", "DockerLauncher", "DockerServerPool",
    "DockerUnavailable", "ImageBuildError", "LineQueue", "Target", "build_image", "build_inputs",
    "choose_base_image", "close_all", "connect", "demux_lines", "docker_environment",
    "dockerfile_for", "dockerfile_stages", "ensure_image", "image_exists", "owner_id",
    "sweep_stale",
]
