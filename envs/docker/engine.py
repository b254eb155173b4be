"""The Docker engine: connect (one-line errors when there is none), owner labels, stale sweep.

Every container and image the launcher makes carries :data:`LABEL`; every container also names
its owner, ``<host>:<pid>`` of the runtime process that started it, so that containers left by
a process that died without cleaning up (SIGKILL, a crashed interpreter) are found and removed at
the next start. The Docker SDK is imported lazily: without it nothing fails at import time.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from envs.server_client import EnvUnavailableError

LABEL = "evr.managed"          # on every container and image the launcher makes
OWNER_LABEL = "evr.owner"      # "<host>:<pid>" of the runtime process that owns a container
ENV_LABEL = "evr.env"
HASH_LABEL = "evr.inputs"


class DockerUnavailable(EnvUnavailableError):
    """No usable Docker engine (or no SDK): the message is one line and names the cause."""


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (engine errors span many)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def say(text: str) -> None:
    """The launcher's one-line notices go to stderr, never into a run's stdout."""
    print(text, file=sys.stderr, flush=True)


def _reason(exc: BaseException) -> str:
    """A short, one-line cause for an engine that cannot be reached."""
    text = str(exc)
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if "FileNotFoundError" in text or "No such file or directory" in text:
        return f"no engine socket at {where}"
    if "ConnectionRefused" in text or "Connection refused" in text:
        return f"connection refused at {where}"
    if "PermissionError" in text or "Permission denied" in text:
        return f"permission denied on {where}"
    if "timed out" in text.lower():
        return f"no answer from {where} (timed out)"
    return one_line(text, 200)


def sdk():
    """The ``docker`` SDK module, or :class:`DockerUnavailable` saying how to install it."""
    try:
        import docker  # noqa: F401
    except ImportError as exc:
        raise DockerUnavailable(
            "the Docker SDK for Python is not installed (pip install 'docker>=7')") from exc
    return docker


_SWEPT = False


def connect(timeout: float = 10.0):
    """A ``docker.DockerClient`` that answered a ping; raises :class:`DockerUnavailable`.
    The first connection of a process sweeps containers of dead runtime processes."""
    global _SWEPT
    docker = sdk()
    try:
        client = docker.from_env(timeout=int(max(1, timeout)))
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailable(f"no Docker engine reachable ({_reason(exc)})") from exc
    except Exception as exc:  # noqa: BLE001 - requests/urllib3/OS errors on the way to the socket
        raise DockerUnavailable(f"no Docker engine reachable ({_reason(exc)})") from exc
    if not _SWEPT:
        _SWEPT = True
        sweep_stale(client)
    return client


def owner_id() -> str:
    """This runtime process as a container's owner: ``<host>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(owner: str) -> bool:
    """Whether the runtime process named by an owner label may still be running (a process on
    another host, or an unreadable label, counts as alive: never remove what may be in use)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return pid_alive(int(pid))


def sweep_stale(client) -> list[str]:
    """Remove containers whose owning runtime process (on this host) is gone; their names."""
    removed: list[str] = []
    try:
        containers = client.containers.list(all=True, filters={"label": LABEL})
    except Exception:  # noqa: BLE001 - best effort
        return removed
    for container in containers:
        if not owner_alive(container.labels.get(OWNER_LABEL, "")):
            try:
                container.remove(force=True)
                removed.append(container.name)
            except Exception:  # noqa: BLE001
                pass
    return removed


def state_dir() -> Path:
    """Where build logs (and container logs before a run names a folder) go."""
    root = os.environ.get("EVR_ENVS_HOME") or "~/.cache/exec-validation-runtime/envs"
    path = Path(root).expanduser() / "docker"
    path.mkdir(parents=True, exist_ok=True)
    return path
