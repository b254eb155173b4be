"""What runs a run's episodes: threads in this process (the default) or Ray workers.

Both are only executors of ``(RunSpec, key) -> (record, artifacts)`` under the one batch loop
(``runtime.batch``), which alone decides what is pending, what re-runs with the cache bypassed,
when the run stops, and writes the run folder; so the records are the same whichever runs them.
Ray is imported only when the Ray backend is chosen.

May import ``runtime.batch``, ``runtime.episode`` and the layers below them; the commands only
as type hints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from runtime.batch import run_batch
from runtime.batch.threads import threads
from runtime.folder.records import EpisodeRecord

if TYPE_CHECKING:
    from runtime.compose.build import Run

BACKENDS = ("threads", "ray")

WorkerSetup = Callable[[], None]
WORKER_SETUP: list[WorkerSetup] = []
"""Called once in every Ray worker before it builds anything: for providers that live in Python
(e.g. scripted test models) and must be registered in each process. Must be picklable by
reference (a module-level function, or a ``functools.partial`` of one)."""


def add_worker_setup(hook: WorkerSetup) -> None:
    if hook not in WORKER_SETUP:
        WORKER_SETUP.append(hook)


def run_episodes(run: "Run", on_done: Callable[[EpisodeRecord], None] = lambda r: None,
                 on_status: Callable[[str], None] = lambda text: None) -> list[str]:
    """Run every pending episode of ``run`` on its configured backend; returns the new records' ids.
    ``on_status`` hears the executor's state in words when it changes (Ray: workers alive)."""
    if run.config.backend == "ray":
        from runtime.backends import ray_backend

        open_executor = ray_backend.executor(run, on_status, WORKER_SETUP)
    else:
        open_executor = threads(run.services)
    return run_batch(run.spec, run.store, open_executor, retry_errors=run.config.retry_errors,
                     max_cost=run.config.max_cost, on_done=on_done)
