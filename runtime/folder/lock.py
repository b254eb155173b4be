"""One writer per run folder: an OS lock on ``<folder>/writer.lock`` held for the whole run.

Two processes appending to one ``records.jsonl`` would each run every pending episode (the
folder ends with two records per episode) and each spend its own ``--max-cost``. The lock is
``flock`` on a file in the folder, so it is the operating system that releases it when its
holder ends in any way, SIGKILL included: a stale lock cannot outlive its process. The holder
writes who it is (pid, host, start time) into the file, so a refusal can name it.

Within one process the lock is counted (``table3`` opens several runs on one folder); it is
released when the last of them lets go, or when the process ends.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from runtime.folder.durable import odd_kind

LOCK_FILE = "writer.lock"


class FolderBusy(RuntimeError):
    """Another process holds the folder's lock (or its lock file cannot be one)."""


_held: dict[str, list] = {}
"""Resolved folder → [open file, count] for the locks this process holds."""
_guard = threading.Lock()


def holder_of(folder: Path) -> str:
    """Who holds (or last held) the lock, in words: ``pid 123 on host, since 2026-...``."""
    try:
        data = json.loads((Path(folder) / LOCK_FILE).read_text(encoding="utf-8") or "{}")
        return f"pid {data['pid']} on {data['host']}, since {data['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


def acquire(folder: Path, wait: float | None = None) -> None:
    """Hold ``folder``'s writer lock (the folder must exist). ``wait``: seconds to wait for a
    holder to finish (None or 0: refuse at once). Raises ``FolderBusy`` naming the holder."""
    key = str(Path(folder).resolve())
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return
        path = Path(folder) / LOCK_FILE
        if kind := odd_kind(path):
            raise FolderBusy(f"{path} is {kind}, where the run keeps its writer lock (a plain "
                             "file); move it aside (nothing was written)")
        try:
            fh = open(path, "a+", encoding="utf-8")
        except OSError as exc:
            raise FolderBusy(f"{path}: cannot open the folder's writer lock ({exc.strerror or exc}); "
                             "fix its permissions or give another --out folder (nothing was "
                             "written)") from None
        deadline = time.monotonic() + (wait or 0.0)
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    who = holder_of(folder)
                    fh.close()
                    waited = f" after waiting {wait:g} s" if wait else ""
                    raise FolderBusy(
                        f"{folder} is being written by another run ({who}){waited}; wait for it "
                        "to end, give another --out folder, or --wait-for-lock SECONDS to wait "
                        "(nothing was written)") from None
                time.sleep(0.2)
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                             "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
        fh.flush()
        _held[key] = [fh, 1]


def release(folder: Path) -> None:
    """Let go of one hold of ``folder``'s lock; the last one unlocks it."""
    key = str(Path(folder).resolve())
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _held[key]
            entry[0].close()  # closing the file releases the flock


def holds(folder: Path) -> bool:
    return str(Path(folder).resolve()) in _held
