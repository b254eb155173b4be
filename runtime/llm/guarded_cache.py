"""A response cache that fails soft mid-run: a reply it cannot store (the disk filled up after
the run's start-up probe, ``runtime.compose.opening``) turns caching off with one warning
instead of failing the episode that made the call — the answer itself was good and paid for.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from runtime.llm.layer import ResponseCache


class GuardedCache(ResponseCache):
    def __init__(self, path: Path):
        super().__init__(path)
        self.broken: str | None = None
        """Why writing stopped, once it did."""
        self._broken_lock = threading.Lock()

    def put(self, key: str, reply: dict[str, Any]) -> None:
        if self.broken is not None:
            return
        try:
            super().put(key, reply)
        except (sqlite3.Error, OSError) as exc:
            with self._broken_lock:  # several threads' puts may fail at once: one warning
                if self.broken is not None:
                    return
                self.broken = str(exc)
            print(f"warning: response cache {self.path} cannot be written ({exc}); new answers "
                  "are no longer cached (the run goes on)", file=sys.stderr)
