"""The executor in this process: episodes in threads sharing one set of services and one
artifact memo (so concurrent modes of a task wait for the first to make ``p0``)."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from runtime.batch.core import Abort, Outcome
from runtime.episode.artifacts import Artifact, ArtifactMemo
from runtime.episode.engine import run_episode
from runtime.episode.services import Services
from runtime.episode.spec import RunSpec
from runtime.folder.records import EpisodeKey


class ThreadExecutor:
    def __init__(self, spec: RunSpec, services: Services):
        self.spec = spec
        self.services = services
        self.memo = ArtifactMemo()
        self.pool = ThreadPoolExecutor(max_workers=max(1, spec.concurrency), thread_name_prefix="episode")
        self.futures: dict[Future, EpisodeKey] = {}

    def submit(self, key: EpisodeKey, artifacts: list[Artifact]) -> bool:
        self.memo.seed(artifacts)
        self.futures[self.pool.submit(run_episode, self.spec, self.services, key, self.memo)] = key
        return True

    def wait(self) -> list[Outcome]:
        done, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        aborted = Abort.of(self.services.layer.aborted)  # one layer: it stops every thread
        outcomes = []
        for future in done:
            key = self.futures.pop(future)
            record, made = future.result()
            outcomes.append(Outcome(key=key, record=record, artifacts=made, aborted=aborted))
        return outcomes

    def abort(self, cause: Abort) -> None:
        self.services.layer.abort(cause.reason, cause.credentials)

    def close(self, finished: bool) -> None:
        if finished:
            self.pool.shutdown(wait=True)
            return
        for future in self.futures:
            future.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


def threads(services: Services):
    """``open_executor`` for ``run_batch``: threads of this process on ``services``."""
    return lambda spec, _pending: ThreadExecutor(spec, services)


def run_in_threads(spec: RunSpec, services: Services, store, **options):
    """``run_batch`` on threads of this process: for tests and scripts that build their own
    services (a scripted layer, an environment behind a test server). Returns the records this
    call wrote, read back from ``store``."""
    from runtime.batch.core import run_batch

    written = set(run_batch(spec, store, threads(services), **options))
    return [r for r in store.records() if r.record_id in written]
