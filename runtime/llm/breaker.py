"""A circuit breaker per endpoint, so a dead server stops the run in seconds instead of costing
every episode its full retry budget.

The circuit opens when an endpoint has failed to connect (refused, reset, timed out) several
times in a row, with no successful call in between, over at least a few seconds: one blip
seen by many concurrent calls at once does not open it, a server that stays down does.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class _Streak:
    failures: int = 0
    since: float = 0.0


class CircuitBreaker:
    def __init__(self, failures: int = 4, min_span_s: float = 5.0, clock=time.monotonic):
        self.failures = failures
        self.min_span_s = min_span_s
        self._clock = clock
        self._streaks: dict[str, _Streak] = {}
        self._open: dict[str, str] = {}
        self._lock = threading.Lock()

    def success(self, endpoint: str) -> None:
        with self._lock:
            self._streaks.pop(endpoint, None)

    def failure(self, endpoint: str, reason: str) -> bool:
        """Count a connection failure; True when this one opened the circuit."""
        with self._lock:
            if endpoint in self._open:
                return False
            streak = self._streaks.setdefault(endpoint, _Streak(since=self._clock()))
            streak.failures += 1
            if streak.failures >= self.failures and self._clock() - streak.since >= self.min_span_s:
                self._open[endpoint] = (f"{endpoint} unreachable: {streak.failures} connection "
                                        f"failures in a row over {self._clock() - streak.since:.0f} s "
                                        f"(last: {reason})")
                return True
            return False

    def open_reason(self, endpoint: str) -> str | None:
        """Why calls to ``endpoint`` are refused, or None while its circuit is closed."""
        with self._lock:
            return self._open.get(endpoint)
