"""A run's money limit (``--max-cost``): whether the batch may start one more episode.

The limit covers the whole run folder — every record in it, whichever command or earlier
invocation wrote it — so a resumed run, and every cell of ``table3`` (one folder), spend from
the same budget. An episode may start only while the money spent plus the estimated cost of the
episodes in flight and of this one stays within the limit; the estimate of an episode is the
mean cost of the finished episodes of its environment, domain and mode (an airline episode
costs ten times a mock one, a Refine episode more than a Direct one). Where none has finished
yet nothing is known, so that episode runs alone to learn the price. Episodes in flight always
finish, so the run ends within about one episode's cost of the limit. A lost attempt's calls
that were in flight when it was lost count at their requests' estimated cost (their answers,
and so their price, never came), not at $0.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from runtime.folder.records import Attempt, EpisodeKey, EpisodeRecord, lost_attempts

BUDGET_SPENT = 4
"""The exit code of a run that stopped at its ``--max-cost``."""


def episode_cost(record: EpisodeRecord) -> float:
    """What the run of the episode that the record is cost (its last attempt)."""
    return float((record.usage or {}).get("total", {}).get("cost_usd", 0.0) or 0.0)


def charged(attempt: Attempt) -> float:
    """What a lost attempt counts against the limit: its answered calls' cost, and its calls in
    flight at their estimate."""
    return attempt.cost_usd + attempt.in_flight_cost_usd


def cost_of(record: EpisodeRecord) -> float:
    """What the record's episode cost the run: its run, and every lost attempt before it."""
    return episode_cost(record) + sum(charged(a) for a in lost_attempts(record))


class BudgetSpent(RuntimeError):
    """The run stopped starting episodes at its cost limit; finished records are saved."""

    def __init__(self, limit: float, spent: float, remaining: int, remaining_cost: float | None):
        self.limit = limit
        self.spent = spent
        self.remaining = remaining
        self.remaining_cost = remaining_cost
        super().__init__(self.describe())

    def describe(self) -> str:
        rest = "" if self.remaining_cost is None else f" (about ${self.remaining_cost:.4f} more)"
        return (f"cost limit ${self.limit:g} reached: ${self.spent:.4f} spent; {self.remaining} "
                f"episode(s) not started{rest}; the same command with a higher --max-cost resumes")


class RunBudget:
    def __init__(self, limit: float, records: Iterable[EpisodeRecord] = (),
                 unrecorded: dict[str, list[Attempt]] | None = None):
        """``unrecorded``: lost attempts no record holds yet (``runtime.folder.lost_attempts``)."""
        self.limit = float(limit)
        self.spent = 0.0
        self._costs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        self._lost: dict[str, float] = defaultdict(float)
        for record in records:
            self.note(record)
        for record_id, attempts in (unrecorded or {}).items():
            cost = sum(charged(a) for a in attempts)
            self.spent += cost
            self._lost[record_id] += cost

    def note(self, record: EpisodeRecord) -> None:
        """A written record: its cost and its lost attempts' (less what ``note_lost`` counted)."""
        self.spent += cost_of(record) - self._lost.pop(record.record_id, 0.0)
        self._costs[_group(record.key)].append(episode_cost(record))

    def note_lost(self, key: EpisodeKey, cost: float) -> None:
        """A lost attempt's spend, counted at once: the episode's record comes later (or never,
        when the run stops first)."""
        self.spent += cost
        self._lost[key.id()] += cost

    def estimate(self, key: EpisodeKey) -> float | None:
        """The mean cost of finished episodes like ``key``; None before the first."""
        costs = self._costs.get(_group(key))
        return sum(costs) / len(costs) if costs else None

    def allows(self, key: EpisodeKey, in_flight: Iterable[EpisodeKey]) -> bool:
        """Whether ``key`` may start while ``in_flight`` run."""
        running = list(in_flight)
        if self.spent >= self.limit:
            return False
        estimates = [self.estimate(k) for k in [*running, key]]
        if any(e is None for e in estimates):
            return not running  # a price not known yet: this episode alone learns it
        return self.spent + sum(estimates) <= self.limit  # type: ignore[arg-type]

    def stopped(self, remaining: list[EpisodeKey]) -> BudgetSpent:
        estimates = [self.estimate(k) for k in remaining]
        total = None if any(e is None for e in estimates) else sum(estimates)  # type: ignore[arg-type]
        return BudgetSpent(self.limit, self.spent, len(remaining), total)


def _group(key: EpisodeKey) -> tuple[str, str, str]:
    return key.env, key.domain, key.mode
