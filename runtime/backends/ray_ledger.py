"""Every model call a Ray worker makes, counted where it outlives the worker.

Why: when a node dies mid-episode, the batch loop runs the episode again, and the lost
attempt's record never comes back — but its calls were sent, answered and paid for. So each
worker tells a ledger (an actor pinned to the driver's node, like the response cache) of every
call of an attempt as it happens: ``begin`` before the request leaves (waited for, so a call
cut off by the loss is still known), ``end`` with its tokens and cost once it is answered.

Nothing is counted twice: the tally of an attempt that came back is dropped (its record's
``usage`` is authoritative); only a lost attempt's tally is taken, once, by the driver, and
becomes an entry of the re-run episode's ``attempts`` (``runtime.folder.records.Attempt``). A
call that reaches the ledger after its attempt was taken is not counted again: it was already
counted there as in flight.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from runtime.folder.records import Attempt

SUMMED = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost_usd")


@dataclass
class Tally:
    worker: str | None = None
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    in_flight: set[int] = field(default_factory=set)
    next_ticket: int = 0


class Ledger:
    """The calls of each attempt still running (or lost); an actor on the driver's node."""

    def __init__(self) -> None:
        self.tallies: dict[str, Tally] = {}
        self.closed: set[str] = set()
        self.lock = threading.Lock()  # a threaded actor: workers call it at once

    def begin(self, attempt: str, worker: str, purpose: str) -> int | None:
        with self.lock:
            if attempt in self.closed:
                return None
            tally = self.tallies.setdefault(attempt, Tally(worker=worker))
            tally.next_ticket += 1
            tally.in_flight.add(tally.next_ticket)
            return tally.next_ticket

    def end(self, attempt: str, worker: str, ticket: int | None, usage: dict[str, Any] | None) -> None:
        """``usage`` None: the call failed (the layer counts it nowhere either)."""
        with self.lock:
            if attempt in self.closed:
                return
            tally = self.tallies.setdefault(attempt, Tally(worker=worker))
            if ticket is not None:
                tally.in_flight.discard(ticket)
            if usage is not None:
                for name in SUMMED:
                    setattr(tally, name, getattr(tally, name) + usage.get(name, 0))

    def take(self, attempt: str) -> dict[str, Any]:
        """A lost attempt's calls (``runtime.folder.records.Attempt`` fields), once."""
        with self.lock:
            self.closed.add(attempt)
            tally = self.tallies.pop(attempt, Tally())
        return self._counts(tally)

    def drop(self, attempt: str) -> None:
        """An attempt that came back: its record counts its calls."""
        with self.lock:
            self.closed.add(attempt)
            self.tallies.pop(attempt, None)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """What each running attempt has counted so far (read by the driver each second: all
        that is left of them if the head, where this ledger lives, is lost)."""
        with self.lock:
            return {attempt: self._counts(tally) for attempt, tally in self.tallies.items()}

    @staticmethod
    def _counts(tally: Tally) -> dict[str, Any]:
        return {"worker": tally.worker, **{name: getattr(tally, name) for name in SUMMED},
                "in_flight_calls": len(tally.in_flight)}

    def open_attempts(self) -> list[str]:
        with self.lock:
            return sorted(self.tallies)


class LedgerSink:
    """A worker's side, for one attempt: ``runtime.llm.layer.Meter.sink``. ``ledger``: the
    ledger actor's handle (each call waited for), or with ``remote=False`` a :class:`Ledger`."""

    def __init__(self, ledger: Any, attempt: str, worker: str, remote: bool = True):
        self.ledger, self.attempt, self.worker, self.remote = ledger, attempt, worker, remote

    def begin(self, purpose: str) -> int | None:
        return self._ask("begin", self.attempt, self.worker, purpose)

    def end(self, ticket: int | None, purpose: str, usage: Any) -> None:
        counts = None if usage is None else {name: getattr(usage, name) for name in SUMMED}
        self._ask("end", self.attempt, self.worker, ticket, counts)

    def _ask(self, name: str, *args: Any) -> Any:
        if not self.remote:
            return getattr(self.ledger, name)(*args)
        import ray

        try:
            return ray.get(getattr(self.ledger, name).remote(*args))
        except ray.exceptions.RayError:
            return None  # the driver's node is gone: the run is ending; the record still counts


def lost_attempt(attempt: str, tally: dict[str, Any]) -> Attempt:
    """The ``Attempt`` of the lost attempt ``attempt`` (``<episode id>#<n>``) from its tally."""
    return Attempt(number=int(attempt.rpartition("#")[2]), ended="lost",
                   **{k: v for k, v in tally.items() if v is not None})
