"""Env servers in containers: the server, its pool, the launcher, the environment, and cleanup.

The runtime side is unchanged: a :class:`envs.server_client.RemoteEnvironment` over a pool of
servers, each server one container (:class:`envs.docker.container.ContainerProcess`) whose
stdin/stdout carry the env-server protocol.

* Containers — one per concurrent episode slot (ToolSandbox keeps world state in a process global);
  each serves many episodes one after another, and every episode builds its environment afresh,
  so no episode sees another's state. Limits: memory, CPUs, pids; no network; read-only root
  filesystem, all capabilities dropped, an unprivileged user.
* Health — a container counts as started when its server answers ``hello``; ``health`` after.
* Logs — a container's stderr is written to ``<log dir>/<container>.log`` when it is removed;
  ``validate`` points the log dir at ``<run folder>/containers``.
* Cleanup — a closed server's container gets EOF on its stdin and exits 0; one that is closed while
  in use (Ctrl-C) or hung is killed. Every container is removed when its server is closed or
  killed, by :func:`close_all` (Ctrl-C, SIGTERM, interpreter exit), and containers of a runtime
  process that no longer exists are swept at the next start.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import weakref
from pathlib import Path
from typing import Callable, Optional

from envs.docker.container import ContainerProcess, ContainerSpec
from envs.docker.engine import DockerUnavailable, connect, one_line, say as say_line, state_dir
from envs.docker.images import TARGETS, build_inputs, ensure
from envs.specs import spec as env_spec
from envs.server_client import (
    EnvServer,
    EnvUnavailableError,
    RemoteEnvironment,
    ServerCommand,
    ServerPool,
    live_pools,
)


class DockerEnvServer(EnvServer):
    """An :class:`EnvServer` whose process is a container (see :class:`ContainerProcess`)."""

    def __init__(self, command: ServerCommand, launcher: "DockerLauncher", start_timeout: float,
                 reply_timeout: float):
        super().__init__(command, start_timeout, reply_timeout)
        self.launcher = launcher

    def _spawn(self) -> ContainerProcess:
        try:
            return self.launcher.spawn()
        except Exception as exc:  # noqa: BLE001 - API errors: no such image, bad limits, ...
            raise EnvUnavailableError(
                f"cannot start the {self.command.name} env server container: {one_line(exc)}"
            ) from exc

    @property
    def container_name(self) -> Optional[str]:
        return getattr(self._proc, "name", None)

    def kill(self, grace: float = 2.0) -> None:
        try:
            super().kill(grace)
        finally:
            if isinstance(self._proc, ContainerProcess):
                self._proc.remove()


class DockerServerPool(ServerPool):
    """A :class:`ServerPool` of containers. ``close()`` ends every container, leased or idle."""

    def __init__(self, launcher: "DockerLauncher", max_size: int = 4, start_timeout: float = 120.0,
                 reply_timeout: float = 600.0):
        command = ServerCommand(name=f"{launcher.env} (docker)", argv=list(launcher.command))
        super().__init__(command, max_size=max_size, start_timeout=start_timeout,
                         reply_timeout=reply_timeout)
        self.launcher = launcher
        self._servers: "weakref.WeakSet[DockerEnvServer]" = weakref.WeakSet()

    def _new_server(self) -> EnvServer:
        server = DockerEnvServer(self.command, self.launcher, self.start_timeout, self.reply_timeout)
        self._servers.add(server)
        return server

    def _forget(self, server: EnvServer) -> None:
        # A container that died while idle: remove it (not under the pool's lock).
        threading.Thread(target=server.kill, kwargs={"grace": 1.0}, daemon=True).start()

    def close(self) -> None:
        super().close()
        for server in list(self._servers):
            server.kill(grace=1.0)


_LAUNCHERS: "weakref.WeakSet[DockerLauncher]" = weakref.WeakSet()


class DockerLauncher:
    """Starts containers of one environment's image; knows the log dir and the limits."""

    def __init__(self, client, env: str, image: str, *, memory: Optional[str] = None,
                 cpus: Optional[float] = None, pids: Optional[int] = None,
                 log_dir: Optional[Path] = None):
        target = TARGETS[env_spec(env).container_target]
        self.client = client
        self.env = env
        self.image = image
        self.command = list(target.command)
        self.network = target.network
        self.memory = memory or os.environ.get("EVR_DOCKER_MEMORY") or "2g"
        self.cpus = float(cpus or os.environ.get("EVR_DOCKER_CPUS") or 1.0)
        self.pids = int(pids or os.environ.get("EVR_DOCKER_PIDS") or 512)
        default_logs = os.environ.get("EVR_DOCKER_LOGS")
        self.log_dir: Path = Path(log_dir or default_logs or state_dir() / "logs")
        self.scrub: Callable[[str], str] = lambda text: text
        """Applied to every container log before it is written (``capture_logs``)."""
        self._processes: "weakref.WeakSet[ContainerProcess]" = weakref.WeakSet()
        _LAUNCHERS.add(self)
        _install_signal_handler()

    def spawn(self) -> ContainerProcess:
        spec = ContainerSpec(image=self.image, command=self.command, env=self.env,
                             network=self.network, memory=self.memory, cpus=self.cpus,
                             pids=self.pids)
        proc = ContainerProcess(self.client, spec, log_dir=lambda: self.log_dir,
                                scrub=lambda text: self.scrub(text))
        self._processes.add(proc)
        return proc

    def remove_all(self) -> None:
        for proc in list(self._processes):
            proc.kill()
            proc.remove()


class DockerEnvironment(RemoteEnvironment):
    """An environment whose env servers run in containers."""

    def __init__(self, name: str, launcher: DockerLauncher, max_servers: Optional[int] = None,
                 start_timeout: float = 300.0, reply_timeout: float = 600.0):
        size = max_servers or int(os.environ.get("EVR_DOCKER_SERVERS") or 4)
        pool = DockerServerPool(launcher, max_size=size, start_timeout=start_timeout,
                                reply_timeout=reply_timeout)
        super().__init__(name, pool, domains=["default"] if name == "toolsandbox" else None)
        self.launcher = launcher
        self.sandbox = "docker"

    def capture_logs(self, folder: Path, scrub: Optional[Callable[[str], str]] = None) -> None:
        """Write each container's stderr to ``folder`` when it is removed (the run folder),
        through ``scrub`` (the runtime's secret scrubber) when one is given."""
        self.launcher.log_dir = Path(folder)
        if scrub is not None:
            self.launcher.scrub = scrub

    def close(self) -> None:
        super().close()
        self.launcher.remove_all()


def close_all() -> None:
    """End every container this process started (Ctrl-C, SIGTERM, interpreter exit)."""
    for pool in live_pools():
        if isinstance(pool, DockerServerPool):
            try:
                pool.close()
            except Exception:  # noqa: BLE001 - keep going: the rest must still go
                pass
    for launcher in list(_LAUNCHERS):
        launcher.remove_all()


atexit.register(close_all)

_HANDLER_INSTALLED = False


def _install_signal_handler() -> None:
    """On SIGTERM (default action: die without cleanup), remove our containers first."""
    global _HANDLER_INSTALLED
    if _HANDLER_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    _HANDLER_INSTALLED = True

    def on_term(signum, frame):  # noqa: ARG001
        close_all()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)


def docker_environment(name: str, *, demanded: bool,
                       say: Callable[[str], None] = say_line) -> Optional[DockerEnvironment]:
    """``name``'s environment with its env servers in containers.

    Says in one line which image (and base image) it uses. With no usable engine (or an image
    that will not build): when ``demanded``, raises :class:`DockerUnavailable` /
    :class:`envs.docker.images.ImageBuildError` (the CLI exits 2 with that one line); otherwise
    says so in one line, naming the launcher used instead, and returns ``None``.
    """
    spec = env_spec(name)
    try:
        client = connect()
        inputs = build_inputs(spec.container_target, client)
        image = ensure(client, inputs, say=say)
    except EnvUnavailableError as exc:
        if demanded:
            raise DockerUnavailable(f"sandbox docker: {one_line(exc, 500)}") from exc
        say(f"sandbox auto: {one_line(exc, 500)}; using the {spec.launcher} launcher instead")
        return None
    say(f"sandbox docker: {name} env servers in {image}, base image {inputs.base_image} "
        f"({inputs.base_reason})")
    return DockerEnvironment(name, DockerLauncher(client, name, image))
