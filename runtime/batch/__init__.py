"""The batch layer: the one owner of what a run's episodes become.

Lives here: the batch loop (``core``): which episodes are pending, which re-run with the cache
bypassed (``--retry-errors``), the stop on a failure every episode would repeat (rejected
credentials, an endpoint that stays down: nothing recorded after it, so the same command
resumes), the run's cost limit (``budget``: no episode starts past it), the record of an
episode whose worker died, the run folder's records and shared
artifacts (written here and nowhere else), p0 sharing across modes and resumes, and progress;
and the executor in this process (``threads``). An executor only runs ``(RunSpec, key) ->
(record, artifacts)``: threads here, Ray workers in ``runtime.backends.ray_backend``.

May import ``runtime.episode``, ``runtime.folder.store``, ``runtime.folder.records`` and ``runtime.llm``; never
the backends or the commands.
"""

from runtime.batch.budget import BUDGET_SPENT, BudgetSpent
from runtime.batch.core import Abort, Executor, Outcome, RunStopped, Stalled, pending, run_batch

__all__ = ["Abort", "BUDGET_SPENT", "BudgetSpent", "Executor", "Outcome", "RunStopped", "Stalled",
           "pending", "run_batch"]
