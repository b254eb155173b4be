"""Ray's own log lines go to the run folder's ``run.log``, never to the console.

Three kinds of Ray output reach a driver:

* its core worker's C++ log lines (``[2026-01-02 10:00:00,123 E 41 41] core_worker.cc:2465: …``),
  written straight to file descriptor 2. Only warnings and errors are written there: the whole
  log is in Ray's session folder;
* Ray's Python loggers (``ray``, ``ray.*``), which Ray gives a handler of its own that writes to
  standard error;
* what the workers print, which Ray forwards to the driver (``log_to_driver``) and prints.

While Ray runs, all three go to loguru at INFO, prefixed ``ray:``. ``runtime.folder.logs`` sends
that level to each run's ``run.log`` and only errors to the console. Descriptor 2 becomes a pipe
read by a thread: a line in Ray's C++ format goes to loguru, anything else goes through to the
real standard error at once, partial lines included. Ray warns that the restartable workers
have "constructor arguments in the object store" (the handle of the cache or limiter actor).
That means nothing to the user, so ``run.log`` gets one line of ours next to it that explains
it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any

RAY_LINE = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [DIWEF] \d+ \d+\] ")
MAX_LINE = 1 << 16
"""A line that long without a newline is passed on as it is (never held forever)."""
EXPLAINED = {
    b"max_restarts > 0": "(ours) Ray's warning above is about the workers' start arguments: they "
                         "hold the handle of the run's response-cache (or model-call limiter) "
                         "actor, which Ray tracks like an object in its store. The driver holds "
                         "that handle, and so keeps the actor, for the whole run.",
}

_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()


def to_run_log(text: str) -> None:
    """One line of Ray's, to ``run.log`` (loguru INFO: below the console's level)."""
    from loguru import logger

    logger.info("ray: {}", text.rstrip("\n"))


class _ToRunLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            to_run_log(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - a log line must never break the run
            pass


def worker_lines(data: dict[str, Any], print_file: Any = None,
                  ignore_prefix: bool = False) -> None:
    """Stands in for Ray's ``print_worker_logs``, which prints a batch of a worker's lines (once
    Ray has deduplicated them, and when it flushes at shutdown): to ``run.log`` instead."""
    pid = data.get("pid")
    who = data.get("actor_name") or data.get("task_name") or "worker"
    source = f"{who} pid={pid}" if str(pid).isdigit() else str(pid)  # "raylet", "autoscaler"
    lines = data.get("lines", [])
    if pid == "autoscaler":  # its events only, as Ray prints them (not every status)
        import ray._private.worker as ray_worker

        lines = list(ray_worker.filter_autoscaler_events(lines))
    for line in lines:
        to_run_log(f"({source}{' stderr' if data.get('is_err') else ''}) {line}")


def start() -> None:
    """Route Ray's output to ``run.log`` until :func:`stop` (call before ``ray.init``)."""
    with _LOCK:
        if _STATE:
            return
        import ray._private.worker as ray_worker

        ray_logger = logging.getLogger("ray")
        _STATE["handlers"] = list(ray_logger.handlers)
        for handler in _STATE["handlers"]:
            ray_logger.removeHandler(handler)
        _STATE["handler"] = _ToRunLog()
        ray_logger.addHandler(_STATE["handler"])
        _STATE["print"] = ray_worker.print_worker_logs
        ray_worker.print_worker_logs = worker_lines
        _STATE["fd2"] = Fd2Filter()


def stop() -> None:
    """Give Ray's Python loggers, its workers' output and descriptor 2 back (after
    ``ray.shutdown``)."""
    with _LOCK:
        if not _STATE:
            return
        import ray._private.worker as ray_worker

        ray_logger = logging.getLogger("ray")
        ray_logger.removeHandler(_STATE.pop("handler"))
        for handler in _STATE.pop("handlers"):
            ray_logger.addHandler(handler)
        ray_worker.print_worker_logs = _STATE.pop("print")
        _STATE.pop("fd2").close()


class Fd2Filter:
    """Descriptor 2 as a pipe: Ray's C++ lines to ``run.log``, everything else through."""

    def __init__(self) -> None:
        self.real = os.dup(2)
        read, write = os.pipe()
        os.dup2(write, 2)
        self.pipe = os.fstat(write)
        os.close(write)
        self.thread = threading.Thread(target=self._pump, args=(read,), name="ray-log-filter",
                                       daemon=True)
        self.thread.start()

    def _pump(self, read: int) -> None:
        pending = b""
        try:
            while chunk := os.read(read, 65536):
                pending = self._route(pending + chunk)
            if pending:
                os.write(self.real, pending)
        except Exception:  # noqa: BLE001 - never leave writers to descriptor 2 blocked
            self._give_back()
        finally:
            os.close(read)
            os.close(self.real)

    def _route(self, data: bytes) -> bytes:
        """Route each whole line; returns a partial Ray line to wait for (others pass now)."""
        while data:
            end = data.find(b"\n") + 1
            if not end:
                if data.startswith(b"[") and len(data) < MAX_LINE:
                    return data  # may be a Ray line: wait for its end
                end = len(data)
            line, data = data[:end], data[end:]
            if RAY_LINE.match(line):
                to_run_log(line.decode("utf-8", "replace"))
                for marker, note in EXPLAINED.items():
                    if marker in line:
                        to_run_log(note)
            else:
                os.write(self.real, line)
        return b""

    def _give_back(self) -> None:
        """Point descriptor 2 at the real standard error again, if it is still our pipe (a
        test's capture may have replaced it since)."""
        try:
            now = os.fstat(2)
            if (now.st_dev, now.st_ino) == (self.pipe.st_dev, self.pipe.st_ino):
                os.dup2(self.real, 2)
        except OSError:
            pass

    def close(self, wait_s: float = 2.0) -> None:
        """Give descriptor 2 back, then let the thread pass on what is left in the pipe (it
        ends when every process that inherited the pipe has closed it)."""
        self._give_back()
        self.thread.join(wait_s)
