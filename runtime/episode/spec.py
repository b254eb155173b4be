"""A run's episode settings as plain data: what every executor (a thread here, a Ray worker on
another machine) needs to run the same experiment.

``RunSpec`` is a pydantic model, so it travels whole (``model_dump`` → ``model_validate``) and a
field added here reaches every process without a list of names to keep in step.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from critique.sealed_options import SealedOptions
from runtime.episode.limits import EpisodeLimits
from runtime.llm.layer import ModelSpec
from runtime.folder.records import AA_MODE, EpisodeKey, Mode

MAX_EPISODES = 1_000_000
"""More episodes than any benchmark has; a typo (``--trials 1000000000``) stops here."""


def check_size(tasks: int, trials: int, modes: list[str], strategies: int) -> None:
    """Refuse a matrix too large to be meant, before anything is allocated for it."""
    per_task = trials * sum(strategies if m == "refine" else 1 for m in modes)
    if tasks * per_task > MAX_EPISODES:
        raise ValueError(f"{tasks} tasks × {per_task} episodes each is more than "
                         f"{MAX_EPISODES:,} episodes; lower --trials or --tasks")


Seeding = Literal["runtime", "tau2"]
SEEDINGS = ("runtime", "tau2")


def episode_seed(seed: int, key: EpisodeKey, seeding: Seeding = "runtime") -> int:
    """The seed an episode's requests carry: its trial's, except the A/A arm's, which is drawn
    independently of every trial seed (so its opening requests, plans and execution are a second,
    independent Plan-first run)."""
    if key.mode == AA_MODE:
        return random.Random(f"{seed}:{key.trial}:{AA_MODE}").randrange(2**31)
    return trial_seed(seed, key.trial, seeding)


def trial_seed(seed: int, trial: int, seeding: Seeding = "runtime") -> int:
    """A per-trial seed derived from the run seed; sent with every request of the trial.

    ``tau2``: the seeds ``tau2 run --seed`` sends (``random.seed(seed)``, then one
    ``randint(0, 1000000)`` per trial: 300 gives 626729 for the first trial), so the same
    ``--seed`` makes the same requests as τ²'s runner."""
    if seeding == "tau2":
        rng = random.Random(seed)
        return [rng.randint(0, 1000000) for _ in range(trial + 1)][trial]
    return random.Random(f"{seed}:{trial}").randrange(2**31)


class RunSpec(BaseModel):
    """Every episode of a run — task × trial × mode (× strategy) — and the settings they share."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    env: str
    sandbox: str = "inproc"
    domain: str
    task_ids: list[str]
    modes: list[Mode]
    trials: int = 1
    seed: int = 0
    seeding: Seeding = "runtime"
    """How trial seeds derive from ``seed``: the runtime's own, or ``tau2 run``'s."""
    models: dict[str, ModelSpec]
    """The model of each role (``runtime.llm.roles.ROLES``)."""
    planner: str = "llm"
    """The planner's name or ``package.module:Class`` (``planners.registry``)."""
    strategies: list[str] = Field(default_factory=lambda: ["anti-leak"])
    """Critique strategies by name (``critique.strategies``); refine runs once per strategy."""
    sealed: SealedOptions = Field(default_factory=SealedOptions)
    """How the ``sealed`` strategy critiques: writer, findings cap, what the guard may do."""
    max_steps: int = 200
    concurrency: int = 4
    judge: bool = True
    auditor: bool = True
    limits: EpisodeLimits = Field(default_factory=EpisodeLimits)
    """What one episode may use (tokens, cost, wall time): ``runtime.episode.limits``."""
    fingerprint: str = ""
    """The id of the settings fingerprint (``runtime.compose.fingerprint``) each record carries."""
    refresh: frozenset[str] = frozenset()
    """Record ids re-run because they errored: their model calls bypass the response cache."""
    env_options: dict[str, str | None] = Field(default_factory=dict)
    """The environment's run options (τ³: ``retrieval``, ``embeddings_api_base``,
    ``embeddings_model``), so a process that builds its own environment (a Ray worker) builds
    the one the driver fingerprinted."""

    def model_post_init(self, _context: object) -> None:
        check_size(len(self.task_ids), self.trials, list(self.modes), len(self.strategies))

    @property
    def tested_model(self) -> str:
        return self.models["model"].model

    def keys(self) -> list[EpisodeKey]:
        """Task-major order, modes last: an episode's shared p0 is made by the first mode that
        needs it and the rest of that task's modes follow right behind."""
        return [
            EpisodeKey(env=self.env, domain=self.domain, task_id=t, mode=m, model=self.tested_model,
                       trial=k, strategy=s)
            for t in self.task_ids
            for k in range(self.trials)
            for m in self.modes
            for s in (self.strategies if m == "refine" else [""])
        ]
