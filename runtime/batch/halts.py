"""How a run is told to stop, as plain types the batch loop, its executors and its shutdown
paths share (``runtime.batch.core`` re-exports them; ``runtime.batch.appendable`` stops a run
with them without importing the loop that imports it)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.llm.layer import RunAborted


class Stalled(RuntimeError):
    """Raised by an executor that can no longer run the pending episodes (a worker that cannot be
    placed): the run stops like on a dead endpoint, resumable, exit 3."""


@dataclass(frozen=True)
class Abort:
    """Why the model layer of the process that ran an episode refuses further calls (plain data:
    an exception's extra fields do not survive pickling)."""

    reason: str
    credentials: bool = False

    @classmethod
    def of(cls, aborted: RunAborted | None) -> "Abort | None":
        return None if aborted is None else cls(str(aborted), aborted.credentials)
