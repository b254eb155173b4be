"""Every model call a Ray worker makes, counted where it outlives the worker.

Why: when a node dies mid-episode, the batch loop runs the episode again, and the lost
attempt's record never comes back — but its calls were sent, answered and paid for. So each
worker tells a ledger (an actor pinned to the driver's node, like the response cache) of every
call of an attempt as it happens: ``begin`` before the request leaves, with the request's
estimated cost (``runtime.llm.estimate.call_estimate``), and ``end`` with its tokens and cost
once it is answered. A call leaves only once ``begin`` said yes: a ledger that refuses (the
attempt was already taken as lost, or the run is over) or cannot be reached (the head or the
driver is gone) keeps it from leaving, so no call is made that the ledger does not know of.

Each ``begin``, ``end``, ``take`` and ``drop`` is also one line of a journal, a file on the
driver's machine written before the ledger answers. When the head is lost the ledger goes with
it, but the journal stays: the driver replays it (:func:`replay`) and has every call that left,
not just the counts of its last reading. Only where the journal cannot be read are the counts
that last reading, and then they are marked as a lower bound (``Attempt.at_least``).

Nothing is counted twice: the tally of an attempt that came back is dropped (its record's
``usage`` is authoritative); only a lost attempt's tally is taken, once, by the driver, and
becomes an entry of the re-run episode's ``attempts`` (``runtime.folder.records.Attempt``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from runtime.folder.records import Attempt

SUMMED = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost_usd")
BEGIN_TIMEOUT_S = 30.0
"""How long a worker waits for the ledger's yes before a call: past it (or at once, when Ray
says the ledger is gone) the call is not made."""


class CallRefused(RuntimeError):
    """The ledger did not let a call leave: its attempt was taken as lost, or the run is over."""


@dataclass
class Tally:
    worker: str | None = None
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    in_flight: dict[int, float] = field(default_factory=dict)
    """ticket → the call's estimated cost, until its answer is known."""
    next_ticket: int = 0


class Ledger:
    """The calls of each attempt still running (or lost); an actor on the driver's node.
    ``journal``: the file on that machine each change is appended to first (None: none)."""

    def __init__(self, journal: str | None = None) -> None:
        self.tallies: dict[str, Tally] = {}
        self.closed: set[str] = set()
        self.refusing = False
        self.lock = threading.Lock()  # a threaded actor: workers call it at once
        self.journal = None
        if journal and Path(journal).parent.is_dir():
            self.journal = open(journal, "a", buffering=1, encoding="utf-8")  # a line: one write(2)

    def _log(self, *entry: Any) -> None:
        if self.journal is not None:
            self.journal.write(json.dumps(entry) + "\n")  # in the kernel before the answer

    def begin(self, attempt: str, worker: str, purpose: str, estimate: float = 0.0) -> int | None:
        """A ticket for one call about to leave; None: refused (the call must not be made)."""
        with self.lock:
            if attempt in self.closed or self.refusing:
                return None
            tally = self.tallies.setdefault(attempt, Tally(worker=worker))
            tally.next_ticket += 1
            tally.in_flight[tally.next_ticket] = float(estimate or 0.0)
            self._log("begin", attempt, worker, purpose, float(estimate or 0.0))
            return tally.next_ticket

    def end(self, attempt: str, worker: str, ticket: int | None, usage: dict[str, Any] | None) -> None:
        """``usage`` None: the call failed (the layer counts it nowhere either)."""
        with self.lock:
            if attempt in self.closed:
                return
            tally = self.tallies.setdefault(attempt, Tally(worker=worker))
            if ticket is not None:
                tally.in_flight.pop(ticket, None)
            if usage is not None:
                for name in SUMMED:
                    setattr(tally, name, getattr(tally, name) + usage.get(name, 0))
            self._log("end", attempt, worker, ticket, usage)

    def take(self, attempt: str) -> dict[str, Any]:
        """A lost attempt's calls (``runtime.folder.records.Attempt`` fields), once."""
        with self.lock:
            self.closed.add(attempt)
            tally = self.tallies.pop(attempt, Tally())
            self._log("take", attempt)
        return self._counts(tally)

    def drop(self, attempt: str) -> None:
        """An attempt that came back: its record counts its calls."""
        with self.lock:
            self.closed.add(attempt)
            self.tallies.pop(attempt, None)
            self._log("drop", attempt)

    def refuse(self) -> None:
        """The run is over (its head lost, or stopping): no call may leave from now on."""
        with self.lock:
            self.refusing = True

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """What each running attempt has counted so far (read by the driver each second: all
        that is left of them if the head, where this ledger lives, is lost and its journal
        cannot be read)."""
        with self.lock:
            return {attempt: self._counts(tally) for attempt, tally in self.tallies.items()}

    @staticmethod
    def _counts(tally: Tally) -> dict[str, Any]:
        return {"worker": tally.worker, **{name: getattr(tally, name) for name in SUMMED},
                "in_flight_calls": len(tally.in_flight),
                "in_flight_cost_usd": sum(tally.in_flight.values())}

    def open_attempts(self) -> list[str]:
        with self.lock:
            return sorted(self.tallies)


def replay(journal: str | Path) -> dict[str, dict[str, Any]] | None:
    """The ledger's counts of every attempt still open, rebuilt from its journal (a torn last
    line is left out); None when the journal cannot be read."""
    ledger = Ledger()
    try:
        raw = Path(journal).read_bytes()
    except OSError:
        return None
    for line in raw.splitlines():
        try:
            op, *args = json.loads(line)
        except ValueError:
            continue
        if op in ("begin", "end", "take", "drop"):
            getattr(ledger, op)(*args)
    return ledger.snapshot()


class LedgerSink:
    """A worker's side, for one attempt: ``runtime.llm.layer.Meter.sink``. ``ledger``: the
    ledger actor's handle (each call waited for), or with ``remote=False`` a :class:`Ledger`.
    ``lost(reason)``: what to raise when the ledger cannot be reached (the worker then stops
    every call of its own: the head or the driver is gone)."""

    def __init__(self, ledger: Any, attempt: str, worker: str, remote: bool = True,
                 lost: Callable[[str], BaseException] | None = None):
        self.ledger, self.attempt, self.worker, self.remote = ledger, attempt, worker, remote
        self.lost = lost or (lambda reason: CallRefused(reason))

    def begin(self, purpose: str, estimate: float = 0.0) -> int:
        if not self.remote:
            ticket = self.ledger.begin(self.attempt, self.worker, purpose, estimate)
        else:
            import ray

            try:
                ticket = ray.get(self.ledger.begin.remote(self.attempt, self.worker, purpose, estimate),
                                 timeout=BEGIN_TIMEOUT_S)
            except (ray.exceptions.RayError, TimeoutError) as exc:
                raise self.lost(f"the run's call ledger on the driver's node cannot be reached "
                                f"({type(exc).__name__}): the Ray head or the driver is gone") from None
        if ticket is None:
            raise CallRefused(f"call not made: attempt {self.attempt} is over (taken as lost, "
                              f"or the run is stopping)")
        return ticket

    def end(self, ticket: int | None, purpose: str, usage: Any) -> None:
        counts = None if usage is None else {name: getattr(usage, name) for name in SUMMED}
        if not self.remote:
            self.ledger.end(self.attempt, self.worker, ticket, counts)
            return
        import ray

        try:  # not waited for long: the answer is in the worker's record anyway
            ray.get(self.ledger.end.remote(self.attempt, self.worker, ticket, counts), timeout=BEGIN_TIMEOUT_S)
        except (ray.exceptions.RayError, TimeoutError):
            pass  # the driver's node is gone: the run is ending; the record still counts


def lost_attempt(attempt: str, tally: dict[str, Any], at_least: bool = False) -> Attempt:
    """The ``Attempt`` of the lost attempt ``attempt`` (``<episode id>#<n>``) from its tally;
    ``at_least``: the tally may be short (a reading of a ledger that was lost after it)."""
    return Attempt(number=int(attempt.rpartition("#")[2]), ended="lost", at_least=at_least,
                   **{k: v for k, v in tally.items() if v is not None})
