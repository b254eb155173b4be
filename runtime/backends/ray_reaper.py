"""Leaves no Ray process behind when the driver that started a local Ray instance dies.

Ray stops most of a local instance when its driver exits, but after a SIGKILL some of its
helper processes (the dashboard and runtime-env agents) outlive the driver. The driver starts
this small watcher first, in a session of its own, holding one end of a pipe, and marks its own
environment with a token that every process it starts afterwards (Ray's included) inherits.

The raylet starts its agents with an environment of its own, without the token, and once the
driver is killed the raylet may exit before the watcher looks, leaving the agents re-parented
away from anything marked. So while the driver lives the watcher keeps a ledger of every marked
process and everything below it (pid and start time, so a reused pid is never mistaken). When
the pipe closes or the watcher loses the driver as its parent — the driver exited, however it
died — it ends every process in the ledger or carrying the token (SIGTERM, then SIGKILL after a
grace period) and exits. Linux only (it reads ``/proc``); elsewhere it does nothing.

    python runtime/backends/ray_reaper.py TOKEN   (started by :func:`start`, not by hand)

It runs as a script with the standard library alone (``python -I``), not through the ``runtime``
package, so it is watching within a fraction of a second instead of after the runtime's imports.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

MARK = "EVR_RAY_OWNER"
GRACE_S = 3.0


def start() -> subprocess.Popen:
    """Start the watcher and mark this process's environment so its later children inherit it."""
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k != MARK}
    proc = subprocess.Popen([sys.executable, "-I", str(Path(__file__).resolve()), token],
                            stdin=subprocess.PIPE, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    proc.stdout.read(1)  # the watcher says it is watching (or ends: then b"" and nothing to wait for)
    proc.stdout.close()
    os.environ[MARK] = token
    return proc


def stop(proc: subprocess.Popen) -> None:
    """Close the pipe (the watcher then sweeps what is left) and wait for the watcher."""
    if proc.stdin and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=GRACE_S + 10)
    except subprocess.TimeoutExpired:
        proc.kill()


def marked(token: str) -> list[int]:
    """Processes of this user whose environment carries ``token``."""
    needle = f"{MARK}={token}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            continue
    return found


def stat_fields(pid: int | str) -> list[str] | None:
    """``/proc/PID/stat`` after the command name (which may hold spaces and parentheses):
    ``[0]`` the state, ``[1]`` the parent pid, ``[19]`` the start time; None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process below them (Ray's agents are started by the raylet and may
    not carry the token in their environment)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        if (fields := stat_fields(entry.name)) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(pids), list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != os.getpid():
                found.add(child)
                todo.append(child)
    return sorted(found)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22): with
    the pid it names one process for good, even once the pid is reused."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields is not None else None


Ledger = dict[int, int]  # pid -> start time


def record(token: str, ledger: Ledger) -> None:
    """Add the marked processes and their descendants, as they are now, to ``ledger``."""
    for pid in with_descendants(marked(token)):
        if pid not in ledger and (started := start_time(pid)) is not None:
            ledger[pid] = started


def still_running(ledger: Ledger) -> list[int]:
    """The ledger's processes that are still the same processes."""
    return [pid for pid, started in ledger.items() if start_time(pid) == started]


def sweep(token: str, ledger: Ledger | None = None) -> list[int]:
    pids = sorted(set(with_descendants(marked(token))) | set(still_running(ledger or {})))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE_S
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.1)
        if not pids:
            break
    return pids


def _alive(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def wait_for_driver_end(token: str, ledger: Ledger, poll_s: float = 0.5) -> None:
    """Return once the driver is gone: its end of the pipe closed, or (should a process that
    outlives it hold a copy of that end) this watcher re-parented away from it. Meanwhile keep
    ``ledger`` up to date."""
    driver = os.getppid()
    fd = sys.stdin.fileno()
    while os.getppid() == driver:
        record(token, ledger)
        try:
            ready, _, _ = select.select([fd], [], [], poll_s)
            if ready and not os.read(fd, 4096):
                return
        except OSError:
            return


def main(argv: list[str]) -> int:
    token = argv[0]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the driver; we wait for its end
    ledger: Ledger = {}
    os.write(sys.stdout.fileno(), b".")
    wait_for_driver_end(token, ledger)
    sweep(token, ledger)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
