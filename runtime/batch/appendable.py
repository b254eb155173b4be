"""No paid call without a place to write it.

Why: an episode pays for its model calls before its record is written; if ``records.jsonl``
cannot take the record then (made immutable, read-only, replaced), the calls are paid for and
the result is lost. So before each episode starts the batch loop asks the store whether it can
append (``RunStore.cannot_append``); when it cannot, the run stops with one line and exit 5
(``RecordsUnwritable``, a ``WriteFailed``) — before any call when nothing runs yet. A loss of
that ability mid-run (seen before the next start, or as an append that fails) stops it the same
way: the episodes in flight are told to stop, and the calls of each one whose record cannot be
written are counted in ``lost_attempts.jsonl`` (``runtime.folder.lost_attempts``), which the
resume attaches to the episode's next record and the budget counts meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runtime.batch.halts import Abort, Stalled
from runtime.folder import lost_attempts
from runtime.folder.durable import WriteFailed
from runtime.folder.records import Attempt
from runtime.folder.store import RunStore

if TYPE_CHECKING:  # the batch loop imports this module
    from runtime.batch.core import Executor, Outcome


class RecordsUnwritable(WriteFailed):
    """``records.jsonl`` cannot take a record: the run stopped (exit 5), its in-flight episodes
    counted as lost attempts."""

    def __init__(self, path: Path, cause: BaseException, stopped: int = 0, unnoted: int = 0):
        super().__init__(path, cause)
        self.stopped, self.unnoted = stopped, unnoted

    def __str__(self) -> str:
        said = super().__str__()
        if not self.stopped:
            return f"{said}; no episode was started (no model call was made for it)"
        counted = self.stopped - self.unnoted
        where = f"their calls counted in {lost_attempts.FILE}" if not self.unnoted else (
            f"{counted} counted in {lost_attempts.FILE}, {self.unnoted} could not be")
        return f"{said}; {self.stopped} episode(s) in flight stopped, {where}"


def check(store: RunStore) -> None:
    """Raise ``RecordsUnwritable`` when a record could not be appended now."""
    if (why := store.cannot_append()) is not None:
        raise RecordsUnwritable(store.records_path, why)


def stop(executor: Executor, store: RunStore, cause: BaseException, in_flight: int,
         outcomes: list[Outcome], lost: dict[str, list[Attempt]]) -> RecordsUnwritable:
    """Stop the run because ``records.jsonl`` cannot take a record: the episodes in flight are
    aborted and waited for, and every one whose record cannot be written (``outcomes``, those
    already back, then the rest) is noted as a lost attempt with the calls it made. Returns the
    error to raise."""
    reason = f"cannot append to {store.records_path}: {getattr(cause, 'why', None) or cause}"
    executor.abort(Abort(reason))
    stopped = unnoted = 0
    waiting = list(outcomes)
    while True:
        for outcome in waiting:
            stopped += 1
            unnoted += not _note(store, outcome, lost, reason)
        if in_flight <= 0:
            break
        try:
            waiting = executor.wait()
        except Stalled:
            unnoted += in_flight
            stopped += in_flight
            break
        in_flight -= len(waiting)
        if not waiting:
            break
    return RecordsUnwritable(store.records_path, cause, stopped, unnoted)


def _note(store: RunStore, outcome: Outcome, lost: dict[str, list[Attempt]], reason: str) -> bool:
    """Note ``outcome``'s calls as a lost attempt of its episode; False when that cannot be
    written either."""
    tries = lost.setdefault(outcome.key.id(), [])
    if outcome.record is not None:
        total = (outcome.record.usage or {}).get("total", {})
        counted = {k: total.get(k, 0) for k in ("calls", "cached_calls", "prompt_tokens",
                                                "completion_tokens", "cost_usd")}
    elif outcome.attempt is not None:
        counted = outcome.attempt.model_dump(exclude={"number", "ended", "reason", "id", "worker"},
                                             exclude_none=True)
    else:
        counted = {}
    attempt = Attempt(**counted, number=len(tries) + 1, ended="lost", reason=reason[:300],
                      worker=outcome.where, id=lost_attempts.new_id())
    try:
        lost_attempts.note(store.root, outcome.key.id(), attempt)
    except WriteFailed:
        return False
    tries.append(attempt)
    return True
