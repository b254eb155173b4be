"""A circuit breaker per endpoint, so a dead server stops the run in seconds instead of costing
every episode its full retry budget.

The circuit opens when an endpoint has failed to connect (refused, reset, timed out) several
times in a row with no HTTP answer in between — any answer, a 429 or a 500 as much as a
success, proves the server is there — over at least a few seconds: one blip seen by many
concurrent calls at once does not open it, a server that stays down does, and a flaky one that
keeps answering with errors is left to the retries. The reason it gives says what it counted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class _Streak:
    failures: int = 0
    since: float = 0.0
    seen: Counter = field(default_factory=Counter)


class CircuitBreaker:
    def __init__(self, failures: int = 4, min_span_s: float = 5.0, clock=time.monotonic):
        self.failures = failures
        self.min_span_s = min_span_s
        self._clock = clock
        self._streaks: dict[str, _Streak] = {}
        self._open: dict[str, str] = {}
        self._lock = threading.Lock()

    def answered(self, endpoint: str) -> None:
        """The endpoint gave an HTTP answer (a success, or an error such as 429, 500, 400, a
        garbage body): it is reachable, so the streak of connection failures ends."""
        with self._lock:
            self._streaks.pop(endpoint, None)

    success = answered

    def failure(self, endpoint: str, reason: str) -> bool:
        """Count a connection failure (no HTTP answer); True when this one opened the circuit."""
        with self._lock:
            if endpoint in self._open:
                return False
            streak = self._streaks.setdefault(endpoint, _Streak(since=self._clock()))
            streak.failures += 1
            streak.seen[reason[:80]] += 1
            span = self._clock() - streak.since
            if streak.failures >= self.failures and span >= self.min_span_s:
                seen = "; ".join(f"{n}× {what}" for what, n in streak.seen.most_common(3))
                self._open[endpoint] = (f"{endpoint} unreachable: {streak.failures} connection "
                                        f"failures in a row with no HTTP answer between them, "
                                        f"over {span:.0f} s (seen: {seen})")
                return True
            return False

    def open_reason(self, endpoint: str) -> str | None:
        """Why calls to ``endpoint`` are refused, or None while its circuit is closed."""
        with self._lock:
            return self._open.get(endpoint)
