"""The batch loop: pending episodes to an executor, its outcomes to the run folder.

Resumable: episodes whose record already exists are skipped. An episode that fails is recorded
as an error with its stage; the run goes on. A failure every episode would repeat (credentials
rejected, an endpoint that stays down) stops the run instead: no episode that ends after it is
recorded (any of them may have been broken by it, even one the environment ended normally), so
the same command resumes them once the cause is fixed. Whatever runs the episodes, this is the
only code that decides any of that, so threads and Ray workers cannot drift apart.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from runtime.batch import appendable
from runtime.batch.halts import Abort, Stalled
from runtime.batch.budget import RunBudget, charged
from runtime.episode.artifacts import Artifact, group_of, identity
from runtime.episode.engine import lost_record
from runtime.episode.spec import RunSpec
from runtime.llm.layer import RunAborted
from runtime.folder.records import BAD_ANSWER, Attempt, EpisodeKey, EpisodeRecord
from runtime.folder import call_ledger, lost_attempts
from runtime.folder.durable import WriteFailed
from runtime.folder.store import RunStore, write_json_atomic

Group = tuple[Any, Any, Any]


LOST_ATTEMPTS = 3
"""Times an episode runs when its worker keeps being lost under it; then it is recorded as an
infrastructure error with the reason (``--retry-errors`` runs it again)."""


class RunStopped(RuntimeError):
    """The run stopped early because of ``cause``; finished records are saved."""

    def __init__(self, cause: RunAborted):
        super().__init__(str(cause))
        self.cause = cause


@dataclass
class Outcome:
    """One finished episode as an executor hands it back."""

    key: EpisodeKey
    record: EpisodeRecord | None
    artifacts: list[Artifact] = field(default_factory=list)
    aborted: Abort | None = None
    """Set when the run must stop: the record is then not kept."""
    lost: tuple[str, str] | None = None
    """(error type, message) when the process running the episode died; ``record`` is None: the
    episode runs again (up to ``LOST_ATTEMPTS`` times in all)."""
    attempt: Attempt | None = None
    """A lost attempt's calls, tokens and cost as the executor counted them outside the dead
    process (``runtime.backends.ray_ledger``): kept in the record of the episode's re-run."""
    where: str | None = None
    """Which worker ran it (kept in ``attempts`` when the episode ran more than once)."""


class Executor(Protocol):
    """Runs ``(RunSpec, key) -> (record, artifacts)``; holds no policy of its own."""

    def submit(self, key: EpisodeKey, artifacts: list[Artifact]) -> bool:
        """Start ``key`` with the artifacts its group already has; False: not now (full)."""

    def wait(self) -> list[Outcome]:
        """Block until at least one episode finished; return every finished one (or ``[]`` when
        nothing runs and ``submit`` may succeed again). May raise ``Stalled``."""

    def abort(self, cause: Abort) -> None:
        """Make the in-flight episodes fail fast (the run is stopping)."""

    def close(self, finished: bool) -> None:
        """Release everything; ``finished`` False: stopping early, do not wait long."""


def pending(spec: RunSpec, store: RunStore, retry_errors: bool = False) -> tuple[list[EpisodeKey], RunSpec]:
    """Episodes without a record (and, with ``retry_errors``, those recorded as errors or as
    ``ok`` with a bad answer flagged: ``runtime.folder.records.BAD_ANSWER``), and the spec to run
    them with: the retried ones' model calls bypass the response cache."""
    done = {record.record_id: record for record in store.records(light=True)}
    keys = spec.keys()
    retried = {k.id() for k in keys if retry_errors and k.id() in done and needs_retry(done[k.id()])}
    todo = [k for k in keys if k.id() not in done or k.id() in retried]
    return todo, spec.model_copy(update={"refresh": spec.refresh | retried})


def needs_retry(record: EpisodeRecord) -> bool:
    """What ``--retry-errors`` runs again: an error, or a record whose score rests on an answer
    that failed validation (an unparsable tool call, an empty message)."""
    return record.status == "error" or bool(set(record.flags) & set(BAD_ANSWER))


class ArtifactIndex:
    """Where the run folder's shared artifacts are, by (domain, task, trial): read once at the
    start, new ones written. It keeps their paths, not their content (read again when a group's
    episode starts), so what a run holds does not grow with the artifacts it has made."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.by_group: dict[Group, dict[str, Path]] = defaultdict(dict)
        for path in sorted((self.root / "artifacts").glob("*/*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.by_group[group_of(data["key"])][identity(data["kind"], data["key"])] = path
            except (OSError, ValueError, KeyError, TypeError):
                continue

    def of(self, key: EpisodeKey) -> list[Artifact]:
        found = []
        for path in self.by_group.get((key.domain, key.task_id, key.trial), {}).values():
            try:
                found.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue  # gone or torn since: the episode makes it again
        return found

    def write_new(self, store: RunStore, artifacts: list[Artifact]) -> None:
        for data in artifacts:
            known = self.by_group[group_of(data["key"])]
            name = identity(data["kind"], data["key"])
            if name not in known:
                path = store.artifact_path(data["kind"], data["key"])
                if not path.exists():
                    write_json_atomic(path, data)
                known[name] = path


def run_batch(spec: RunSpec, store: RunStore, open_executor: Callable[[RunSpec, int], Executor], *,
              retry_errors: bool = False, max_cost: float | None = None,
              on_done: Callable[[EpisodeRecord], None] = lambda r: None) -> list[str]:
    """Run every pending episode of ``spec`` on the executor ``open_executor(spec, pending)``
    makes; returns the ids of the records written by this call (not the records: a run's memory
    must not grow with its episodes — they are in the folder, and ``on_done`` sees each once). Raises ``RunStopped`` on an abort, and
    ``BudgetSpent`` (after the episodes in flight finished) when ``max_cost`` stops the run
    (``runtime.batch.budget``)."""
    todo, spec = pending(spec, store, retry_errors)
    if not todo:
        return []
    call_ledger.recover(store.root)  # the calls of a driver that ended before it counted them
    recorded = store.records(light=True)
    carried = lost_attempts.unrecorded(store.root, recorded)  # an earlier run's losses
    budget = RunBudget(max_cost, recorded, carried) if max_cost is not None else None
    del recorded  # the budget keeps its sums, not the records
    if budget is not None and not budget.allows(todo[0], []):
        raise budget.stopped(todo)
    appendable.check(store)  # before anything starts: one line, exit 5, no call made
    index = ArtifactIndex(store.root)
    executor = open_executor(spec, len(todo))
    queue = deque(todo)
    in_flight = 0
    running: list[EpisodeKey] = []
    spent = False
    written: list[str] = []
    window = 4 * spec.concurrency
    lost: dict[str, list[Attempt]] = defaultdict(list, {k: list(v) for k, v in carried.items()})
    losses: dict[str, int] = defaultdict(int)  # this invocation's, for LOST_ATTEMPTS
    finished = False
    try:
        while (queue and not spent) or in_flight:
            held: list[EpisodeKey] = []
            scanned = 0
            if queue and not spent and in_flight < spec.concurrency and (why := store.cannot_append()):
                raise appendable.stop(executor, store, why, in_flight, [], lost)  # no start without it
            while queue and not spent and in_flight < spec.concurrency and scanned < window:
                key = queue.popleft()
                scanned += 1
                if budget is not None and not budget.allows(key, running):
                    held.append(key)
                    spent = in_flight == 0  # else: wait for them, then ask again
                    break
                if executor.submit(key, index.of(key)):
                    in_flight += 1
                    running.append(key)
                else:
                    held.append(key)
            queue.extendleft(reversed(held))
            if spent and not in_flight:
                break
            try:
                outcomes = executor.wait()
            except Stalled as exc:
                raise RunStopped(RunAborted(str(exc))) from exc
            in_flight -= len(outcomes)
            for outcome in outcomes:
                running.remove(outcome.key)
            stop = next((o.aborted for o in outcomes if o.aborted), None)
            for outcome in outcomes:
                index.write_new(store, outcome.artifacts)  # made before the stop: still good
                if stop:
                    continue  # may have been broken by the fatal failure: left to resume
                tries = lost[outcome.key.id()]
                if outcome.record is None:
                    tries.append(lost_attempt(outcome, len(tries) + 1))
                    lost_attempts.note(store.root, outcome.key.id(), tries[-1])  # until a record holds it
                    losses[outcome.key.id()] += 1
                    if budget is not None:
                        budget.note_lost(outcome.key, charged(tries[-1]))  # paid, now
                    if losses[outcome.key.id()] < LOST_ATTEMPTS:
                        queue.appendleft(outcome.key)  # its worker was lost: run it elsewhere
                        continue
                record = outcome.record or lost_record(spec, outcome.key, *outcome.lost,
                                                       attempts=losses[outcome.key.id()])
                record = with_attempts(record, tries, outcome.where, outcome.record is not None)
                if spec.fingerprint and record.fingerprint is None:
                    record = record.model_copy(update={"fingerprint": spec.fingerprint})
                try:
                    store.append(record)
                except WriteFailed as exc:  # its calls, and those in flight, go to lost_attempts
                    unnoted = outcomes.index(outcome) + (outcome.record is None)  # a lost run is noted
                    raise appendable.stop(executor, store, exc, in_flight, outcomes[unnoted:], lost) from exc
                written.append(record.record_id)
                lost.pop(outcome.key.id(), None)  # its record holds them: nothing kept per episode
                if budget is not None:
                    budget.note(record)
                on_done(record)
            if stop:
                executor.abort(stop)
                raise RunStopped(RunAborted(stop.reason, stop.credentials))
        finished = True
    finally:
        executor.close(finished)
    if queue and budget is not None:
        raise budget.stopped(list(queue))
    return written


def lost_attempt(outcome: Outcome, number: int) -> Attempt:
    """The lost run of ``outcome``'s episode, with what the executor counted of it (nothing
    where it counts nothing: threads lose no attempt)."""
    reason = " ".join(f"{outcome.lost[0]}: {outcome.lost[1]}".split())[:300] if outcome.lost else None
    counted = (outcome.attempt.model_dump(exclude={"number", "ended", "reason"}, exclude_none=True)
               if outcome.attempt else {})
    # the executor's id where it gave one (one per journal and attempt: noted again by a later
    # recovery, it is still counted once)
    return Attempt(**{"worker": outcome.where, **counted, "number": number, "ended": "lost",
                      "reason": reason, "id": counted.get("id") or lost_attempts.new_id()})


def with_attempts(record: EpisodeRecord, lost: list[Attempt], where: str | None,
                  finished: bool) -> EpisodeRecord:
    """``record`` holding every run of its episode when there was more than one: the lost ones,
    then (when one ``finished``: not every run was lost) the one the record is."""
    if not lost:
        return record
    runs = list(lost)
    if finished:
        total = (record.usage or {}).get("total", {})
        runs.append(Attempt(number=len(runs) + 1, ended="finished", worker=where,
                            **{k: total.get(k, 0) for k in ("calls", "cached_calls", "prompt_tokens",
                                                             "completion_tokens", "cost_usd")}))
    return record.model_copy(update={"attempts": runs})
