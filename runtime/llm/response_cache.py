"""The on-disk response cache: a request's hash → the reply, so a re-run of the same request
costs nothing. Keyed on the whole request (never a key: keys are not in requests we store), the
reply scrubbed before it is kept; which replies may be kept is the layer's decision
(``runtime.llm.guarded_cache`` refuses an unwritable cache before the first episode)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from runtime.folder.scrub import scrub

__all__ = ["ResponseCache"]


class ResponseCache:
    """A SQLite file mapping a request's hash to the reply. Safe across threads."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT)")
        self._db.commit()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, reply: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)",
                             (key, scrub(json.dumps(reply))))
            self._db.commit()
