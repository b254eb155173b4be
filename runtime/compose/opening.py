"""Opening a run folder for writing: its one writer's lock, the settings of the records it
already holds, a readable ``run.json`` and a response cache that can be written — all settled
before anything is written, so a refusal leaves the folder as it was (and a folder this
invocation created is removed again).

Settings are compared with the records, not only with ``run.json``: a record is what counts as
"already done", so deleting ``run.json`` or giving another ``--run-id`` must not let a run at
other settings count it (``runtime.compose.fingerprint`` names the differences where
``run.json`` still holds the records' settings).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from runtime.compose import fingerprint
from runtime.compose.config import UsageError
from runtime.folder import lock
from runtime.folder.run_info import RunInfoError, known_settings, read_run_info
from runtime.folder.store import RunStore


def run_info(folder: Path) -> dict[str, Any] | None:
    """``run.json`` checked; unreadable or not the shape the runtime writes → ``UsageError``."""
    try:
        return read_run_info(folder)
    except RunInfoError as exc:
        raise UsageError(f"{exc}; move it aside (the records alone carry what a resume needs) "
                         "or give another --out folder (nothing was written)") from None


def _arm(key) -> tuple[str, ...]:
    return key.env, key.domain, key.model, key.mode, key.strategy


def record_changes(store: RunStore, spec, identity: dict[str, Any],
                   info: dict[str, Any] | None) -> list[str]:
    """How the records this invocation would resume (same environment, domain, tested model,
    mode and strategy; any run id) were made otherwise than ``identity`` says."""
    arms = {_arm(k) for k in spec.keys()}
    try:
        records = store.records()
    except OSError as exc:
        raise UsageError(f"{store.records_path}: cannot be read ({exc.strerror or exc}); fix its "
                         "permissions or give another --out folder (nothing was written)") from exc
    others = Counter(r.fingerprint for r in records
                     if r.fingerprint and r.fingerprint != identity["id"] and _arm(r.key) in arms)
    known = known_settings(info)
    changes: list[str] = []
    for fp, count in sorted(others.items()):
        if fp in known:
            changes += [c for c in fingerprint.changed_settings(known[fp], identity) if c not in changes]
        else:
            changes.append(f"{count} record(s) made with settings {fp}, which run.json does not "
                           f"describe, where this invocation's are {identity['id']}")
    return changes


def probe_cache(path: Path) -> None:
    """Write and remove one row in the response cache at ``path``: a cache that cannot take a
    reply (a read-only or full file system) is found before the first episode."""
    db = sqlite3.connect(str(path), timeout=60)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT)")
        db.execute("INSERT OR REPLACE INTO replies VALUES ('.write-probe', ?)", ("x" * 8192,))
        db.execute("DELETE FROM replies WHERE key = '.write-probe'")
        db.commit()
    finally:
        db.close()


class FolderOpening:
    """Undo what a refused opening made: the lock, and the folder itself when it was new."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.created = not self.out.exists()
        self.locked = False

    def lock(self, wait: float | None) -> None:
        try:
            lock.acquire(self.out, wait)
        except lock.FolderBusy as exc:
            raise UsageError(str(exc)) from None
        self.locked = True

    def undo(self) -> None:
        if self.locked:
            lock.release(self.out)
        if self.created and self.out.is_dir():
            shutil.rmtree(self.out, ignore_errors=True)


def open_cache(cache_dir: Path, mode: str, make: Callable[[Path], Any], say: Callable[[str], None],
               open_folder: Callable) -> Any:
    """The response cache, checked writable; ``mode`` "off": a cache that is not is left out
    with one warning instead of refusing the run."""
    def checked(d: Path):
        cache = make(d)
        probe_cache(Path(d) / "responses.sqlite")
        return cache

    try:
        return open_folder(cache_dir, "--cache-dir", checked)
    except UsageError as exc:
        if mode != "off":
            raise UsageError(f"{exc}; or --unwritable-cache off to run without a cache") from None
        say(f"[yellow]warning: {exc}; running without a response cache "
            "(--unwritable-cache off)[/]")
        return None
