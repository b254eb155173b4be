"""The call ledger's books and its journal in the run folder: every model call a Ray worker made,
counted even when the process that should have counted it is gone.

Why: a Ray worker asks the run's ledger (an actor on the driver's node,
``runtime.backends.ray_ledger``) before each call leaves. The ledger's books are kept here, and
each change (``begin``, ``end``, ``take``, ``drop``) is first one line of a journal,
``call_journal/<id>.jsonl`` in the run folder. When the head is lost the ledger goes with it, but
the journal stays: the driver replays it (:func:`replay`). And when the driver itself ends before
it has counted its lost attempts — Ray's own 60-second exit on a lost head takes the process
without a word, a SIGKILL, a power cut — the journal is still in the folder: the next run of the
folder (:func:`recover`, at the start of every resume, whatever the backend) writes each attempt
the journal holds open to ``lost_attempts.jsonl`` and removes the journal. Each such attempt's id
is derived from the journal's name and the attempt (:func:`attempt_id`), so noting it twice (the
driver, then a recovery after a crash before the journal was removed) counts it once.

What a journal does not settle: an attempt whose record was appended in the last moment before
the driver died, before the driver wrote that the record holds its calls (``drop``), is counted
twice (in its record and as lost) — an over-count of one attempt, never a call missing.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.folder import lost_attempts
from runtime.folder.records import Attempt

DIR = "call_journal"
"""The run folder's sub-folder of journals: one a Ray executor, removed when its run ends."""
SUMMED = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost_usd")
_LIVE: set[str] = set()
"""The journals of this process's executors still running: never recovered (one process may run
several cells on one folder, ``runtime.folder.lock``)."""
RECOVERED = ("the driver ended before it counted this attempt (Ray's exit on a lost head, or a "
             "kill); its calls were read from the run's call journal")


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
    """The calls of each attempt still running (or lost). ``journal``: the file each change is
    appended to first (None: none)."""

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
            if op in ("begin", "end", "take", "drop"):
                getattr(ledger, op)(*args)
        except (ValueError, TypeError):
            continue
    return ledger.snapshot()


def new_journal(root: Path) -> str | None:
    """A fresh journal's absolute path in run folder ``root`` (its sub-folder made), or None where
    the sub-folder cannot be made (the ledger then keeps no journal: lower bounds on a lost head).
    Absolute, because the ledger that writes it is another process, whose working directory is
    Ray's, not this one's (``--out runs/x``)."""
    folder = Path(root).resolve() / DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    path = str(folder / f"{uuid.uuid4().hex}.jsonl")
    _LIVE.add(path)
    return path


def mark_recorded(journal: str | None, attempts: list[str]) -> None:
    """Say in ``journal`` that ``attempts`` came back and their records hold their calls — from
    the driver, after the records were appended, whether or not the ledger is still there."""
    if not journal or not attempts:
        return
    try:
        with open(journal, "a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(["drop", a]) + "\n" for a in attempts))
    except OSError:
        pass  # the folder is going: the run is stopping for that reason already


def attempt_id(journal: str | Path | None, attempt: str) -> str:
    """A lost attempt's id: one per (journal, attempt), so every path that notes it agrees."""
    if not journal:
        return lost_attempts.new_id()
    return hashlib.sha256(f"{Path(journal).stem}:{attempt}".encode()).hexdigest()[:32]


def lost_attempt(attempt: str, tally: dict[str, Any], at_least: bool = False,
                 journal: str | Path | None = None, reason: str | None = None) -> Attempt:
    """The ``Attempt`` of the lost attempt ``attempt`` (``<episode id>#<n>``) from its tally;
    ``at_least``: the tally may be short (a reading of a ledger that was lost after it)."""
    return Attempt(number=int(attempt.rpartition("#")[2]), ended="lost", at_least=at_least,
                   id=attempt_id(journal, attempt), reason=reason,
                   **{k: v for k, v in tally.items() if v is not None})


def _left(root: Path) -> list[Path]:
    folder = Path(root).resolve() / DIR  # absolute, as :func:`new_journal` names them
    if not folder.is_dir():
        return []
    return [j for j in sorted(folder.glob("*.jsonl")) if str(j) not in _LIVE]


def uncounted(root: Path) -> tuple[int, int]:
    """(attempts, calls) that journals left in ``root`` hold open and no run has counted yet —
    read only, for a report to say so."""
    attempts = calls = 0
    for journal in _left(root):
        for tally in (replay(journal) or {}).values():
            attempts, calls = attempts + 1, calls + tally["calls"] + tally["in_flight_calls"]
    return attempts, calls


def recover(root: Path) -> tuple[int, int]:
    """Every journal a driver left in run folder ``root``: each attempt it holds open goes to
    ``lost_attempts.jsonl``, then the journal goes. Returns (attempts, calls) recovered. Runs
    under the folder's writer lock, so no journal here belongs to a live run."""
    attempts = calls = 0
    for journal in _left(root):
        open_ones = replay(journal)
        if open_ones is None:
            continue  # unreadable: kept, for a later run or a person to read
        for attempt, tally in open_ones.items():
            lost = lost_attempt(attempt, tally, journal=journal, reason=RECOVERED)
            lost_attempts.note(root, attempt.rpartition("#")[0], lost)
            attempts, calls = attempts + 1, calls + lost.calls + lost.in_flight_calls
        journal.unlink(missing_ok=True)
    try:
        (Path(root) / DIR).rmdir()
    except OSError:
        pass  # something else is in it: left as it is
    return attempts, calls


def release(journal: str | None, counted: bool) -> None:
    """The executor that wrote ``journal`` has ended. ``counted``: it noted every attempt it lost
    and has none in flight, so the journal (and its folder, when empty) goes; else it stays for
    the next run of the folder to count (:func:`recover`)."""
    if not journal:
        return
    _LIVE.discard(journal)
    if not counted:
        return
    Path(journal).unlink(missing_ok=True)
    try:
        Path(journal).parent.rmdir()
    except OSError:
        pass
