"""One container run as a process: created, attached on stdin/stdout/stderr, removed with its log.

:class:`ContainerProcess` looks like ``subprocess.Popen`` to :class:`envs.server_client.EnvServer`
(``stdin``, ``stdout``, ``stderr``, ``poll``, ``wait``, ``terminate``, ``kill``), so a server in a
container is driven exactly like one in a local process. The engine's attach socket carries the
container's stdin (its write half) and its stdout and stderr multiplexed in frames, which a thread
splits into lines per stream. Closing ``stdin`` half-closes the socket: the server reads EOF and
exits 0 (``StdinOnce``), as a local process does when its pipe closes.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from envs.docker.engine import ENV_LABEL, LABEL, OWNER_LABEL, owner_id


class LineQueue:
    """An iterator of byte lines fed by the demultiplexing thread; ``None`` ends it."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Optional[bytes]]" = queue.Queue()

    def put(self, item: Optional[bytes]) -> None:
        self._queue.put(item)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            item = self._queue.get()
            if item is None:
                return
            yield item


def demux_lines(frames: Iterator[tuple[int, bytes]], stdout: "LineQueue", stderr: "LineQueue") -> None:
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


class SocketStdin:
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
    """What one container runs and within which limits."""

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

    def __init__(self, client, spec: ContainerSpec, log_dir: Callable[[], Path],
                 scrub: Callable[[str], str] = lambda text: text):
        self.client = client
        self.spec = spec
        self._log_dir = log_dir
        self._scrub = scrub
        self.returncode: Optional[int] = None
        self._eof = threading.Event()
        self._removed = False
        self._lock = threading.Lock()
        self.stdout = LineQueue()
        self.stderr = LineQueue()
        with ContainerProcess._counter_lock:
            ContainerProcess._counter += 1
            n = ContainerProcess._counter
        self.name = f"evr-{spec.env}-{os.getpid()}-{n}-{os.urandom(2).hex()}"
        self.container = client.containers.create(
            spec.image, list(spec.command), name=self.name,
            stdin_open=True,               # with detach=False this sets StdinOnce: EOF ends the server
            labels={LABEL: "1", OWNER_LABEL: owner_id(), ENV_LABEL: spec.env},
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
            self.stdin = SocketStdin(raw)
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
        text = (logs or b"").decode("utf-8", errors="replace")
        with (folder / f"{self.name}.log").open("w", encoding="utf-8") as fh:
            fh.write(json.dumps(header) + "\n")
            fh.write(self._scrub(text))
