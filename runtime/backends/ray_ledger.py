"""Every model call a Ray worker makes, counted where it outlives the worker.

Why: when a node dies mid-episode, the batch loop runs the episode again, and the lost
attempt's record never comes back — but its calls were sent, answered and paid for. So each
worker tells a ledger (an actor pinned to the driver's node, like the response cache) of every
call of an attempt as it happens: ``begin`` before the request leaves, with the request's
estimated cost (``runtime.llm.estimate.call_estimate``), and ``end`` with its tokens and cost
once it is answered. A call leaves only once ``begin`` said yes: a ledger that refuses (the
attempt was already taken as lost, or the run is over) or cannot be reached (the head or the
driver is gone) keeps it from leaving, so no call is made that the ledger does not know of.

The ledger's books and its journal are the run folder's (``runtime.folder.call_ledger``): each
``begin``, ``end``, ``take`` and ``drop`` is first one line of a journal in the run folder, on
the driver's machine. When the head is lost the ledger goes with it, but the journal stays: the
driver replays it and has every call that left, not just the counts of its last reading; and if
the driver goes too, the next run of the folder counts them from it. Only where the journal
cannot be read are the counts that last reading, marked as a lower bound (``Attempt.at_least``).

Nothing is counted twice: the tally of an attempt that came back is dropped (its record's
``usage`` is authoritative); only a lost attempt's tally is taken, once, by the driver, and
becomes an entry of the re-run episode's ``attempts`` (``runtime.folder.records.Attempt``).
"""

from __future__ import annotations

from typing import Any, Callable

from runtime.folder.call_ledger import SUMMED

BEGIN_TIMEOUT_S = 30.0
"""How long a worker waits for the ledger's yes before a call: past it (or at once, when Ray
says the ledger is gone) the call is not made."""


class CallRefused(RuntimeError):
    """The ledger did not let a call leave: its attempt was taken as lost, or the run is over."""


class LedgerSink:
    """A worker's side, for one attempt: ``runtime.llm.layer.Meter.sink``. ``ledger``: the
    ledger actor's handle (each call waited for), or with ``remote=False`` a ``runtime.folder.call_ledger.Ledger``.
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
