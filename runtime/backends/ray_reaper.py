"""Leaves no Ray process behind when the driver that started a local Ray instance dies.

Ray stops most of a local instance when its driver exits, but after a SIGKILL some of its
helper processes (the dashboard and runtime-env agents) outlive the driver. The driver starts
this small watcher first, in a session of its own, holding one end of a pipe, and marks its own
environment with a token that every process it starts afterwards (Ray's included) inherits. When
the pipe closes or the watcher loses the driver as its parent — the driver exited, however it
died — the watcher ends every process that
carries the token (SIGTERM, then SIGKILL after a grace period) and exits. Linux only (it reads
``/proc``); elsewhere it does nothing.

    python -m runtime.backends.ray_reaper TOKEN   (started by :func:`start`, not by hand)
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
    proc = subprocess.Popen([sys.executable, "-m", "runtime.backends.ray_reaper", token],
                            stdin=subprocess.PIPE, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process below them (Ray's agents are started by the raylet and may
    not carry the token in their environment)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(pids), list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != os.getpid():
                found.add(child)
                todo.append(child)
    return sorted(found)


def sweep(token: str) -> list[int]:
    pids = with_descendants(marked(token))
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
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for_driver_end(poll_s: float = 0.5) -> None:
    """Return once the driver is gone: its end of the pipe closed, or (should a process that
    outlives it hold a copy of that end) this watcher re-parented away from it."""
    driver = os.getppid()
    fd = sys.stdin.fileno()
    while os.getppid() == driver:
        try:
            ready, _, _ = select.select([fd], [], [], poll_s)
            if ready and not os.read(fd, 4096):
                return
        except OSError:
            return


def main(argv: list[str]) -> int:
    token = argv[0]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the driver; we wait for its end
    wait_for_driver_end()
    sweep(token)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
