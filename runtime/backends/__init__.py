"""What runs a run's episodes: threads in this process (the default) or Ray workers.

Both backends take the same :class:`runtime.build.Run` and write through the same single writer
(the driver's ``RunStore``), so records stay atomic, resumable and duplicate-free whichever runs
them. Ray is imported only when the Ray backend is chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from runtime import runner
from runtime.records import EpisodeRecord

if TYPE_CHECKING:
    from runtime.build import Run

BACKENDS = ("threads", "ray")

WorkerSetup = Callable[[], None]
WORKER_SETUP: list[WorkerSetup] = []
"""Called once in every Ray worker before it builds anything: for providers that live in Python
(e.g. scripted test models) and must be registered in each process. Must be picklable by
reference (a module-level function, or a ``functools.partial`` of one)."""


def add_worker_setup(hook: WorkerSetup) -> None:
    if hook not in WORKER_SETUP:
        WORKER_SETUP.append(hook)


def run_episodes(run: "Run", on_done: Callable[[EpisodeRecord], None] = lambda r: None) -> list[EpisodeRecord]:
    """Run every pending episode of ``run`` on its configured backend; returns the new records."""
    if run.config.backend == "ray":
        from runtime.backends import ray_backend

        return ray_backend.run(run, on_done)
    return runner.run(run.matrix, on_done)
